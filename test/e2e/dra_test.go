//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/nodeplug/nodeplug/test/e2e/framework"
)

// TestDRATestDriver runs upstream's DRA test driver (build/dra-test-driver)
// as a DaemonSet on every node, registered only through nodeplug's
// registration directory, and checks the DRA cases of docs/plugin-watcher.md
// (draCases).
func TestDRATestDriver(t *testing.T) {
	c := framework.Connect(t)
	c.RequireNodes(t, 2)
	regDir := registrationDir(t, c)
	d := draTestDriver()
	start := time.Now()
	draDeploy(t.Context(), t, c, d, regDir)
	t.Logf("driver deployed on %d nodes in %s", len(c.Nodes), time.Since(start).Round(time.Millisecond))
	draCases(t, c, d, regDir)
}

// draCases checks, in order, on a driver deployed on every node: slices and
// claims on every node, a maxSurge rolling update while those claims are in
// use, a kubelet restart, and the driver killed.
func draCases(t *testing.T, c *framework.Cluster, d *draDriver, regDir string) {
	ctx := t.Context()
	parent := t
	restarted, killed := c.Nodes[1], c.Nodes[len(c.Nodes)-1]
	t.Run("SlicesAndClaimOnEveryNode", func(t *testing.T) { draSlicesAndClaims(ctx, t, parent, c, d) })
	t.Run("RollingUpdateMaxSurge", func(t *testing.T) { draRollingUpdate(ctx, t, c, d) })
	t.Run("KubeletRestart", func(t *testing.T) { draKubeletRestart(ctx, t, c, d, restarted) })
	t.Run("DriverKilledSlicesOutliveGracePeriod", func(t *testing.T) { draDriverKilled(ctx, t, c, d, killed, regDir) })
}

// draSlicesAndClaims: every node publishes the driver's devices, and a pod
// with a claim of its DeviceClass runs on each node with a device of that
// node. The pods belong to parent: the next cases run while they are in use.
func draSlicesAndClaims(ctx context.Context, t, parent *testing.T, c *framework.Cluster, d *draDriver) {
	if err := framework.Poll(t.Context(), 60*time.Second, func(context.Context) bool { return draSlicesOnAll(ctx, c, d) }); err != nil {
		got, _ := draSlices(ctx, c, d)
		t.Fatalf("ResourceSlices of %s: devices per node %v, want %d on each of the %d nodes", d.name, got, d.devices, len(c.Nodes))
	}
	// The pods outlive this case: the rolling update runs while their
	// claims are in use.
	pods := draClaimPods(ctx, t, parent, c, d, d.podPrefix+"in-use", c.Nodes)
	for _, n := range c.Nodes {
		draRequireClaim(ctx, t, c, d, pods[n.Name], n)
	}
}

// draRollingUpdate updates the DaemonSet (maxSurge 1) while the first
// case's claims are in use: no ResourceSlice is deleted, those pods keep
// their containers, each kubelet registers the new instance, and a new
// pod's claim is prepared by it.
func draRollingUpdate(ctx context.Context, t *testing.T, c *framework.Cluster, d *draDriver) {
	inUse := draPodsByPrefix(ctx, t, c, d.podPrefix+"in-use")
	old := draInstances(ctx, t, c, d)
	regs := map[string]float64{}
	for _, n := range c.Nodes {
		regs[n.Name] = draRegistrations(ctx, c, n.Name)
	}
	w := draWatchSlices(ctx, t, c, d)
	began := time.Now()
	d.update(ctx, t, c)
	cur := draAwaitRollout(ctx, t, c, d, len(c.Nodes), old)
	t.Logf("rolling update over %d nodes took %s", len(c.Nodes), time.Since(began).Round(time.Millisecond))
	if deleted := w.stop(); len(deleted) > 0 {
		t.Errorf("ResourceSlices deleted during the rolling update: %v", deleted)
	}
	if !draSlicesOnAll(ctx, c, d) {
		got, _ := draSlices(ctx, c, d)
		t.Errorf("after the rolling update: devices per node %v, want %d on each node", got, d.devices)
	}
	for _, p := range inUse {
		draRequireUntouched(ctx, t, c, p)
	}
	for _, n := range c.Nodes {
		if got := draRegistrations(ctx, c, n.Name); got <= regs[n.Name] {
			t.Errorf("the kubelet on %s registered no new DRAPlugin instance during the update (registrations %v before, %v after)", n.Name, regs[n.Name], got)
		}
	}
	fresh := draClaimPods(ctx, t, t, c, d, d.podPrefix+"after-update", c.Nodes)
	for _, n := range c.Nodes {
		claim := draRequireClaim(ctx, t, c, d, fresh[n.Name], n)
		draRequirePreparedBy(ctx, t, c, d, cur[n.Name], claim)
	}
}

// draKubeletRestart restarts the kubelet on node restarted (systemctl in
// the node): it registers the running driver again, without a restart of
// the driver, and a new claim on the node is prepared.
func draKubeletRestart(ctx context.Context, t *testing.T, c *framework.Cluster, d *draDriver, restarted *framework.Node) {
	before := draInstances(ctx, t, c, d)[restarted.Name]
	if before == nil {
		t.Fatalf("no driver instance on node %s", restarted.Name)
	}
	w := draWatchSlices(ctx, t, c, d)
	began := time.Now()
	restartComponentOn(ctx, t, c, restarted, "kubelet", nil)
	if err := framework.Poll(t.Context(), 60*time.Second, func(context.Context) bool { return draRegistrations(ctx, c, restarted.Name) >= 1 }); err != nil {
		t.Fatalf("the restarted kubelet on %s has not registered a DRAPlugin in 60 s (nodeplug_plugin_watcher_registrations_total)", restarted.Name)
	}
	t.Logf("kubelet on %s restarted and the driver registered again in %s", restarted.Name, time.Since(began).Round(time.Millisecond))
	after := draInstances(ctx, t, c, d)[restarted.Name]
	if after == nil || after.UID != before.UID || krContainer(after) != krContainer(before) {
		t.Errorf("the driver on %s was restarted: before %s %s, after %v", restarted.Name, before.UID, krContainer(before), draDescribe(after))
	}
	// Upstream's kubelet deletes all of its node's ResourceSlices when
	// it starts (DRAPluginManager); the driver, still running,
	// publishes them again.
	if err := framework.Poll(t.Context(), 30*time.Second, func(context.Context) bool { return draSlicesOnAll(ctx, c, d) }); err != nil {
		got, _ := draSlices(ctx, c, d)
		t.Errorf("30 s after the kubelet restart on %s: devices per node %v, want %d on each node", restarted.Name, got, d.devices)
	}
	t.Logf("ResourceSlices deleted by the restarted kubelet's start-up wipe and published again by the driver: %v", w.stop())
	pods := draClaimPods(ctx, t, t, c, d, d.podPrefix+"after-restart", []*framework.Node{restarted})
	draRequireClaim(ctx, t, c, d, pods[restarted.Name], restarted)
}

// draDriverKilled deletes the DaemonSet leaving its pods, then kills the
// driver on node killed (SIGKILL) and deletes its pod: the node's slices
// stay for upstream's 30 s grace period, then go; the other nodes' stay.
func draDriverKilled(ctx context.Context, t *testing.T, c *framework.Cluster, d *draDriver, killed *framework.Node, regDir string) {
	// Its claims are released while the driver still runs.
	for _, p := range draPodsByPrefix(ctx, t, c, d.podPrefix) {
		if p.Spec.NodeName == killed.Name {
			c.DeletePod(t, p.Name)
		}
	}
	orphan := metav1.DeletePropagationOrphan
	if err := c.Client.AppsV1().DaemonSets(d.namespace).Delete(ctx, d.daemonSet, metav1.DeleteOptions{PropagationPolicy: &orphan}); err != nil {
		t.Fatal(err)
	}
	victim := draInstances(ctx, t, c, d)[killed.Name]
	if victim == nil {
		t.Fatalf("no driver instance on node %s", killed.Name)
	}
	killedAt := draKill(ctx, t, c, d, victim)
	left, _ := filepath.Glob(filepath.Join(killed.HostPath(regDir), d.name+"-*-reg.sock"))
	t.Logf("registration sockets left on %s by the killed driver: %d", killed.Name, len(left))
	// As an operator would once the driver is gone for good: the stale
	// sockets would otherwise stay registered for the rest of the suite.
	dataSocks, _ := filepath.Glob(filepath.Join(killed.HostPath(framework.KubeletRootDir), "plugins", d.name, "*.sock"))
	t.Cleanup(func() {
		for _, f := range append(left, dataSocks...) {
			_ = os.Remove(f)
		}
	})
	var goneAfter time.Duration
	err := framework.Poll(t.Context(), 90*time.Second, func(context.Context) bool {
		got, err := draSlices(ctx, c, d)
		goneAfter = time.Since(killedAt)
		return err == nil && got[killed.Name] == 0
	})
	if err != nil {
		t.Fatalf("the slices of node %s are still there 90 s after its driver was killed", killed.Name)
	}
	t.Logf("slices of node %s went %s after its driver was killed", killed.Name, goneAfter.Round(time.Millisecond))
	// Upstream's grace period runs from the kubelet losing the driver,
	// after the kill; 1 s is left for the timers' granularity.
	if goneAfter < 29*time.Second {
		t.Errorf("the slices of node %s went %s after its driver was killed, before upstream's 30 s grace period", killed.Name, goneAfter.Round(time.Millisecond))
	}
	got, _ := draSlices(ctx, c, d)
	for _, n := range c.Nodes {
		if n != killed && got[n.Name] != d.devices {
			t.Errorf("node %s publishes %d devices after the driver on %s was killed, want %d", n.Name, got[n.Name], killed.Name, d.devices)
		}
	}
}

// draKill kills the driver's process in pod with SIGKILL (its sockets stay
// behind) and deletes the pod, which nothing replaces. It returns when the
// process died.
func draKill(ctx context.Context, t *testing.T, c *framework.Cluster, d *draDriver, pod *corev1.Pod) time.Time {
	t.Helper()
	pid := draDriverPID(t, d, pod)
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatalf("kill the driver %d on %s: %v", pid, pod.Spec.NodeName, err)
	}
	at := time.Now()
	zero := int64(0)
	if err := c.Client.CoreV1().Pods(d.namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
		t.Fatal(err)
	}
	return at
}

// draDriverPID finds the host PID of the driver running in pod: the process
// whose argv[0] is the driver's command and whose environment has the pod's
// UID (both drivers take POD_UID from the downward API).
func draDriverPID(t *testing.T, d *draDriver, pod *corev1.Pod) int {
	t.Helper()
	want := "\x00POD_UID=" + string(pod.UID) + "\x00"
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, f := range procs {
		raw, err := os.ReadFile(f)
		if err != nil || !strings.HasPrefix(string(raw), d.command+"\x00") {
			continue
		}
		env, err := os.ReadFile(filepath.Join(filepath.Dir(f), "environ"))
		if err != nil || !strings.Contains("\x00"+string(env), want) {
			continue
		}
		var pid int
		if _, err := fmt.Sscan(filepath.Base(filepath.Dir(f)), &pid); err == nil {
			return pid
		}
	}
	t.Fatalf("no process %s of the driver in pod %s (POD_UID=%s) on this machine", d.command, pod.Name, pod.UID)
	return 0
}

// sliceWatch records the driver's ResourceSlices deleted while it runs.
type sliceWatch struct {
	w       watch.Interface
	mu      sync.Mutex
	deleted []string
	done    chan struct{}
}

func draWatchSlices(ctx context.Context, t *testing.T, c *framework.Cluster, d *draDriver) *sliceWatch {
	t.Helper()
	w, err := c.Client.ResourceV1().ResourceSlices().Watch(ctx, metav1.ListOptions{FieldSelector: "spec.driver=" + d.name})
	if err != nil {
		t.Fatalf("watch ResourceSlices: %v", err)
	}
	s := &sliceWatch{w: w, done: make(chan struct{})}
	go func() {
		defer close(s.done)
		for ev := range w.ResultChan() {
			if sl, ok := ev.Object.(*resourceapi.ResourceSlice); ok && ev.Type == watch.Deleted {
				s.mu.Lock()
				s.deleted = append(s.deleted, fmt.Sprintf("%s (node %s) at %s", sl.Name, draStr(sl.Spec.NodeName), time.Now().Format(time.TimeOnly)))
				s.mu.Unlock()
			}
		}
	}()
	t.Cleanup(w.Stop)
	return s
}

// stop ends the watch and returns the slices deleted meanwhile.
func (s *sliceWatch) stop() []string {
	s.w.Stop()
	<-s.done
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.deleted
}

func draStr(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

func draDescribe(p *corev1.Pod) string {
	if p == nil {
		return "none"
	}
	return string(p.UID) + " " + krContainer(p)
}

// draSlicesOnAll reports whether every node publishes the driver's devices.
func draSlicesOnAll(ctx context.Context, c *framework.Cluster, d *draDriver) bool {
	got, err := draSlices(ctx, c, d)
	if err != nil {
		return false
	}
	for _, n := range c.Nodes {
		if got[n.Name] != d.devices {
			return false
		}
	}
	return true
}

// draRegistrations reads node's nodeplug_plugin_watcher_registrations_total
// for DRAPlugin (through the API server's node proxy).
func draRegistrations(ctx context.Context, c *framework.Cluster, node string) float64 {
	text, err := c.KubeletMetrics(ctx, node)
	if err != nil {
		return 0
	}
	return framework.MetricSum(text, "nodeplug_plugin_watcher_registrations_total", `plugin_type="DRAPlugin"`)
}
