//go:build e2e

package e2e

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/nodeplug/nodeplug/test/e2e/framework"
)

// withoutExperimentalFlags drops nodeplug's --experimental-* flags.
func withoutExperimentalFlags(argv []string) []string {
	var out []string
	for _, a := range argv {
		if !strings.HasPrefix(a, "--experimental-") {
			out = append(out, a)
		}
	}
	return out
}

// componentHealth is where each restartable component answers when ready.
var componentHealth = map[string]string{
	"kubelet":                 "http://127.0.0.1:10248/healthz",
	"kube-controller-manager": "https://127.0.0.1:10257/healthz",
}

// restartComponent stops the component local-up started and starts it
// again, as an operator's service manager would, with edit (nil: none)
// applied to its command line, the same environment and the same log,
// waiting until it is healthy (and for the kubelet, the node Ready). The
// returned func restarts it with the original command line.
func restartComponent(ctx context.Context, tb testing.TB, c *framework.Cluster, name string, edit func([]string) []string) func() {
	tb.Helper()
	pidFile := filepath.Join(c.Dir, "pids", name)
	raw, err := os.ReadFile(pidFile)
	if err != nil {
		tb.Fatal(err)
	}
	pid := strings.TrimSpace(string(raw))
	argv, env := procList(tb, pid, "cmdline"), procList(tb, pid, "environ")
	health := componentHealth[name]
	if health == "" {
		tb.Fatalf("no health check known for %s", name)
	}
	edited := argv
	if edit != nil {
		edited = edit(argv)
	}
	restartAs(ctx, tb, c, name, pid, edited, env, health)
	return func() {
		raw, err := os.ReadFile(pidFile)
		if err != nil {
			tb.Error(err)
			return
		}
		restartAs(ctx, tb, c, name, strings.TrimSpace(string(raw)), argv, env, health)
	}
}

func restartAs(ctx context.Context, tb testing.TB, c *framework.Cluster, name, pid string, argv, env []string, health string) {
	tb.Helper()
	var p int
	fmt.Sscan(pid, &p)
	if err := syscall.Kill(p, syscall.SIGTERM); err != nil {
		tb.Fatalf("stop %s %d: %v", name, p, err)
	}
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		return syscall.Kill(p, 0) != nil, nil
	}); err != nil {
		tb.Fatalf("%s %d did not stop", name, p)
	}
	logf, err := os.OpenFile(filepath.Join(c.Dir, "logs", name+".log"), os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		tb.Fatal(err)
	}
	defer logf.Close()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env, cmd.Stdout, cmd.Stderr = env, logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		tb.Fatalf("start %s: %v", name, err)
	}
	if err := os.WriteFile(filepath.Join(c.Dir, "pids", name), fmt.Appendf(nil, "%d\n", cmd.Process.Pid), 0o644); err != nil {
		tb.Fatal(err)
	}
	go func() { _ = cmd.Wait() }()
	client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} // #nosec G402 -- a local health check
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 90*time.Second, true, func(context.Context) (bool, error) {
		resp, err := client.Get(health)
		if err != nil {
			return false, nil
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	}); err != nil {
		tb.Fatalf("%s not healthy after its restart: %v", name, err)
	}
	if name == "kubelet" {
		if _, err := c.Kubectl(ctx, "wait", "--for=condition=Ready", "node/"+c.NodeName, "--timeout=60s"); err != nil {
			tb.Fatalf("node not Ready after the kubelet restart: %v", err)
		}
	}
}
