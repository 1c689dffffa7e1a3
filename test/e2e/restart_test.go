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

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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

// componentHealth is where each restartable component answers when ready
// (the kubelet: on its node's loopback).
var componentHealth = map[string]string{
	"kubelet":                 "http://127.0.0.1:10248/healthz",
	"kube-controller-manager": "https://127.0.0.1:10257/healthz",
}

// restartComponent stops the component local-up started (the kubelet: of
// the first node) and starts it again, as an operator's service manager
// would, with edit (nil: none) applied to its command line, the same
// environment and the same log, waiting until it is healthy (and for the
// kubelet, the node Ready). The returned func restarts it with the
// original command line.
func restartComponent(ctx context.Context, tb testing.TB, c *framework.Cluster, name string, edit func([]string) []string) func() {
	tb.Helper()
	return restartComponentOn(ctx, tb, c, c.Node, name, edit)
}

// restartComponentOn is restartComponent for node n's kubelet (n is not
// used for a control plane component).
func restartComponentOn(ctx context.Context, tb testing.TB, c *framework.Cluster, n *framework.Node, name string, edit func([]string) []string) func() {
	tb.Helper()
	onNode := name == "kubelet"
	pidFile := c.PIDFile(tb, name)
	if onNode {
		pidFile = n.PIDFile(tb, name)
	}
	raw, err := os.ReadFile(pidFile)
	if err != nil {
		tb.Fatal(err)
	}
	pid := strings.TrimSpace(string(raw))
	argv, env := procList(tb, pid, "cmdline"), procList(tb, pid, "environ")
	if componentHealth[name] == "" {
		tb.Fatalf("no health check known for %s", name)
	}
	edited := argv
	if edit != nil {
		edited = edit(argv)
	}
	if onNode && n.HasServiceManager() {
		// As an operator does on a node: an override of the unit's
		// command, and systemctl restart.
		if edit != nil {
			setServiceCommand(tb, n, name, edited)
		}
		serviceJob(ctx, tb, c, n, name, "restart")
		return func() {
			if edit != nil {
				setServiceCommand(tb, n, name, nil)
			}
			serviceJob(ctx, tb, c, n, name, "restart")
		}
	}
	restartAs(ctx, tb, c, n, name, pidFile, pid, edited, env)
	return func() {
		raw, err := os.ReadFile(pidFile)
		if err != nil {
			tb.Error(err)
			return
		}
		restartAs(ctx, tb, c, n, name, pidFile, strings.TrimSpace(string(raw)), argv, env)
	}
}

func restartAs(ctx context.Context, tb testing.TB, c *framework.Cluster, n *framework.Node, name, pidFile, pid string, argv, env []string) {
	tb.Helper()
	stopPID(ctx, tb, name, pid)
	startAs(ctx, tb, c, n, name, pidFile, argv, env)
}

func setServiceCommand(tb testing.TB, n *framework.Node, unit string, argv []string) {
	tb.Helper()
	if err := n.SetServiceCommand(context.Background(), unit, argv); err != nil {
		tb.Fatalf("override the command of %s on node %s: %v", unit, n.Name, err)
	}
}

// serviceJob runs systemctl JOB (start, stop, restart) of a node's unit,
// and after a start waits until the component is healthy and its Node
// Ready.
func serviceJob(ctx context.Context, tb testing.TB, c *framework.Cluster, n *framework.Node, unit, job string) {
	tb.Helper()
	if _, err := n.Systemctl(ctx, job, unit); err != nil {
		tb.Fatal(err)
	}
	if job != "stop" {
		awaitHealthy(ctx, tb, c, n, unit, true)
	}
}

// stopPID stops the component with pid as a service manager's stop does.
func stopPID(ctx context.Context, tb testing.TB, name, pid string) {
	tb.Helper()
	var p int
	fmt.Sscan(pid, &p)
	if err := syscall.Kill(p, syscall.SIGTERM); err != nil {
		tb.Fatalf("stop %s %d: %v", name, p, err)
	}
	if err := framework.Poll(ctx, 30*time.Second, func(context.Context) bool {
		return syscall.Kill(p, 0) != nil
	}, framework.PollEvery(100*time.Millisecond)); err != nil {
		tb.Fatalf("%s %d did not stop", name, p)
	}
}

// startAs starts a component with argv and env, appending to its log, and
// waits until it is healthy (the kubelet: and its Node Ready).
func startAs(ctx context.Context, tb testing.TB, c *framework.Cluster, n *framework.Node, name, pidFile string, argv, env []string) {
	tb.Helper()
	onNode := name == "kubelet"
	logPath := filepath.Join(c.Dir(tb), "logs", name+".log")
	if onNode {
		logPath = n.Log(tb, name)
	}
	logf, err := os.OpenFile(logPath, os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		tb.Fatal(err)
	}
	defer logf.Close()
	cmd := exec.Command(argv[0], argv[1:]...)
	if onNode {
		cmd = n.DaemonCommand(tb, argv[0], argv[1:]...)
	}
	cmd.Env, cmd.Stdout, cmd.Stderr = env, logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		tb.Fatalf("start %s: %v", name, err)
	}
	go func() { _ = cmd.Wait() }()
	newPID := cmd.Process.Pid
	if onNode {
		if newPID, err = n.DaemonPID(ctx, cmd); err != nil {
			tb.Fatal(err)
		}
	}
	if err := os.WriteFile(pidFile, fmt.Appendf(nil, "%d\n", newPID), 0o644); err != nil {
		tb.Fatal(err)
	}
	awaitHealthy(ctx, tb, c, n, name, onNode)
}

// awaitHealthy waits until the component answers its health check, and
// for the kubelet, until its Node is Ready.
func awaitHealthy(ctx context.Context, tb testing.TB, c *framework.Cluster, n *framework.Node, name string, onNode bool) {
	tb.Helper()
	if err := framework.Poll(ctx, 90*time.Second, func(context.Context) bool {
		return healthy(ctx, n, name, onNode)
	}, framework.PollEvery(200*time.Millisecond)); err != nil {
		tb.Fatalf("%s not healthy after its restart: %v", name, err)
	}
	if onNode {
		// The Node may not exist yet: a kubelet registers it when it starts.
		err := framework.Poll(ctx, 60*time.Second, func(ctx context.Context) bool {
			node, err := c.Client.CoreV1().Nodes().Get(ctx, n.Name, metav1.GetOptions{})
			return err == nil && framework.NodeReady(node)
		})
		if err != nil {
			tb.Fatalf("node %s not Ready 60 s after the kubelet restart: %v", n.Name, err)
		}
	}
}

// healthy reports whether component answers its health check, on node n's
// loopback for a node component.
func healthy(ctx context.Context, n *framework.Node, component string, onNode bool) bool {
	url := componentHealth[component]
	if onNode {
		return n.Command(ctx, "curl", "-sfk", "--max-time", "2", url).Run() == nil
	}
	client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} // #nosec G402 -- a local health check
	resp, err := client.Get(url)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}
