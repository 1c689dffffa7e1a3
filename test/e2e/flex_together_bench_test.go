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

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/nodeplug/nodeplug/test/e2e/framework"
)

// BenchmarkFlexDriverInstalledWithPod measures what TestFlexDriverInstalledWithPod
// checks: a flex driver is installed and a pod that uses it is created at
// once; the time is from the install to the pod Running. Side by side in
// one run: "nodeplug" (the binaries as the e2e suite runs them) and
// "upstream" (the same kubelet and kube-controller-manager restarted
// without any --experimental-* flag, so with upstream's flexvolume prober;
// restored afterwards). Each iteration installs a driver of a new name.
// Two orders: the driver installed first and the pod at once, and the pod
// created podFirstLead before the driver. An upstream pod-first attachable
// sample takes minutes: run with -benchtime=3x.
//
//	hack/e2e.sh -run '^$' -bench BenchmarkFlexDriverInstalledWithPod -benchtime=3x
func BenchmarkFlexDriverInstalledWithPod(b *testing.B) {
	c := framework.Connect(b)
	c.RequireFlag(b, "kubelet", "--experimental-flexvolume-discovery")
	c.RequireFlag(b, "kube-controller-manager", "--experimental-flexvolume-discovery")
	loop, err := os.ReadFile(filepath.Join("..", "..", "deploy", "flexvolume", "drivers", "nodeplug.io~loop", "loop"))
	if err != nil {
		b.Fatal(err)
	}
	scripts := map[string]string{"not-attachable": trivialDriver, "attachable": string(loop)}
	for _, mode := range []string{"nodeplug", "upstream"} {
		b.Run(mode, func(b *testing.B) {
			if mode == "upstream" {
				ctx := context.Background()
				restoreKCM := btRestart(ctx, b, c, "kube-controller-manager", withoutExperimentalFlags, "https://127.0.0.1:10257/healthz")
				b.Cleanup(restoreKCM)
				restoreKubelet := btRestart(ctx, b, c, "kubelet", withoutExperimentalFlags, "http://127.0.0.1:10248/healthz")
				b.Cleanup(restoreKubelet)
			}
			for _, kind := range []string{"not-attachable", "attachable"} {
				for _, order := range []string{"driver-first", "pod-first"} {
					b.Run(kind+"/"+order, func(b *testing.B) { btMeasure(b, c, mode, kind, scripts[kind], order == "pod-first") })
				}
			}
		})
	}
}

// podFirstLead is how long before its driver the pod is created in the
// pod-first order: the workload lands on a new node a moment before the
// installer DaemonSet has copied the driver.
const podFirstLead = 500 * time.Millisecond

// btMeasure installs a driver and creates its pod at once (or the pod
// podFirstLead before the driver), b.N times. The time runs from the first
// of the two.
func btMeasure(b *testing.B, c *framework.Cluster, mode, kind, script string, podFirst bool) {
	ctx := context.Background()
	var lat []time.Duration
	for i := 0; b.Loop(); i++ {
		vendor := fmt.Sprintf("bench%d-%s-%s", time.Now().UnixNano()%1e6, mode, strings.ReplaceAll(kind, "-", ""))
		driver := vendor + "/drv"
		opts := map[string]string{}
		if kind == "attachable" {
			opts = map[string]string{"size": "16M", "dir": filepath.Join(c.Dir, "shared", vendor)}
		}
		start := time.Now()
		pod := flexPod(fmt.Sprintf("e2e-bench-%d", start.UnixNano()%1e9), driver, opts)
		if podFirst {
			c.CreatePod(ctx, b, pod)
			time.Sleep(podFirstLead)
		}
		installDriver(b, filepath.Join(c.Dir, "flexvolume", vendor+"~drv"), "drv", script)
		if !podFirst {
			c.CreatePod(ctx, b, pod)
		}
		c.WaitForPod(ctx, b, pod.Name, 6*time.Minute, corev1.PodRunning)
		lat = append(lat, time.Since(start))
		b.StopTimer()
		c.DeletePod(b, pod.Name)
		if kind == "attachable" {
			waitLoopReleased(b, filepath.Join(opts["dir"], "data.img"))
		}
		b.StartTimer()
	}
	b.ReportMetric(ms(quantile(lat, 0.50)), "p50-ms")
	b.ReportMetric(ms(quantile(lat, 1)), "max-ms")
}

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

// btRestart stops the component local-up started and starts it again with
// edit applied to its command line (same environment, same log), waiting
// for health. The returned func restarts it with the original command line.
func btRestart(ctx context.Context, tb testing.TB, c *framework.Cluster, name string, edit func([]string) []string, health string) func() {
	tb.Helper()
	pidFile := filepath.Join(c.Dir, "pids", name)
	raw, err := os.ReadFile(pidFile)
	if err != nil {
		tb.Fatal(err)
	}
	pid := strings.TrimSpace(string(raw))
	argv, env := procList(tb, pid, "cmdline"), procList(tb, pid, "environ")
	btStartAs(ctx, tb, c, name, pid, edit(argv), env, health)
	return func() {
		raw, err := os.ReadFile(pidFile)
		if err != nil {
			tb.Error(err)
			return
		}
		btStartAs(ctx, tb, c, name, strings.TrimSpace(string(raw)), argv, env, health)
	}
}

func btStartAs(ctx context.Context, tb testing.TB, c *framework.Cluster, name, pid string, argv, env []string, health string) {
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
