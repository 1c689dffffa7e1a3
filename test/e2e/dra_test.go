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

// TestDRADrivers installs two DRA drivers nobody here wrote on every node,
// side by side, each registered only through nodeplug's registration
// directory: kubernetes-sigs/dra-example-driver with helm and its own chart
// (dra_example_test.go) and upstream's DRA test driver
// (build/dra-test-driver). Both go through the cases of
// docs/plugin-watcher.md together (draCases), so that each case also checks
// that the watcher keeps two DRA drivers of one node apart.
func TestDRADrivers(t *testing.T) {
	c := framework.Connect(t)
	c.RequireNodes(t, 2)
	regDir := registrationDir(t, c)
	ctx := t.Context()
	start := time.Now()
	example := draExampleInstall(ctx, t, c, regDir)
	upstream := draTestDriver()
	draDeploy(ctx, t, c, upstream, regDir)
	t.Logf("both drivers deployed on %d nodes in %s", len(c.Nodes), time.Since(start).Round(time.Millisecond))
	draCases(t, c, []*draDriver{example, upstream}, regDir)
}

// draCases checks, in order, on drivers deployed on every node: slices and
// claims on every node, a maxSurge rolling update of each while those
// claims are in use, a kubelet restart, and the drivers killed.
func draCases(t *testing.T, c *framework.Cluster, ds []*draDriver, regDir string) {
	ctx := t.Context()
	parent := t
	restarted, killed := c.Nodes[1], c.Nodes[len(c.Nodes)-1]
	t.Run("SlicesAndClaimOnEveryNode", func(t *testing.T) {
		for _, d := range ds {
			draSlicesAndClaims(ctx, t, parent, c, d)
		}
	})
	t.Run("RollingUpdateMaxSurge", func(t *testing.T) {
		for _, d := range ds {
			t.Run(d.label, func(t *testing.T) { draRollingUpdate(ctx, t, c, d) })
		}
	})
	t.Run("KubeletRestart", func(t *testing.T) { draKubeletRestart(ctx, t, c, ds, restarted) })
	t.Run("DriverKilledSlicesOutliveGracePeriod", func(t *testing.T) { draDriverKilled(ctx, t, c, ds, killed, regDir) })
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

// draRollingUpdate updates the driver's DaemonSet (maxSurge 1) while the
// first case's claims are in use: none of its ResourceSlices is deleted,
// those pods keep their containers, each kubelet registers the new
// instance, and a new pod's claim is prepared by it.
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
	t.Logf("rolling update of %s over %d nodes took %s", d.label, len(c.Nodes), time.Since(began).Round(time.Millisecond))
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
// the node): it registers every running driver again, without a restart of
// any, and a new claim of each on the node is prepared.
func draKubeletRestart(ctx context.Context, t *testing.T, c *framework.Cluster, ds []*draDriver, restarted *framework.Node) {
	before := map[*draDriver]*corev1.Pod{}
	watches := map[*draDriver]*sliceWatch{}
	for _, d := range ds {
		if before[d] = draInstances(ctx, t, c, d)[restarted.Name]; before[d] == nil {
			t.Fatalf("no %s instance on node %s", d.label, restarted.Name)
		}
		watches[d] = draWatchSlices(ctx, t, c, d)
	}
	began := time.Now()
	restartComponentOn(ctx, t, c, restarted, "kubelet", nil)
	want := float64(len(ds))
	if err := framework.Poll(t.Context(), 60*time.Second, func(context.Context) bool { return draRegistrations(ctx, c, restarted.Name) >= want }); err != nil {
		t.Fatalf("the restarted kubelet on %s has not registered %v DRAPlugins in 60 s (nodeplug_plugin_watcher_registrations_total: %v)", restarted.Name, want, draRegistrations(ctx, c, restarted.Name))
	}
	t.Logf("kubelet on %s restarted and the drivers registered again in %s", restarted.Name, time.Since(began).Round(time.Millisecond))
	for _, d := range ds {
		after := draInstances(ctx, t, c, d)[restarted.Name]
		if after == nil || after.UID != before[d].UID || krContainer(after) != krContainer(before[d]) {
			t.Errorf("%s on %s was restarted: before %s %s, after %v", d.label, restarted.Name, before[d].UID, krContainer(before[d]), draDescribe(after))
		}
		// Upstream's kubelet deletes all of its node's ResourceSlices
		// when it starts (DRAPluginManager); the driver, still running,
		// publishes them again.
		if err := framework.Poll(t.Context(), 30*time.Second, func(context.Context) bool { return draSlicesOnAll(ctx, c, d) }); err != nil {
			got, _ := draSlices(ctx, c, d)
			t.Errorf("30 s after the kubelet restart on %s: %s devices per node %v, want %d on each node", restarted.Name, d.label, got, d.devices)
		}
		t.Logf("%s ResourceSlices deleted by the restarted kubelet's start-up wipe and published again by the driver: %v", d.label, watches[d].stop())
		pods := draClaimPods(ctx, t, t, c, d, d.podPrefix+"after-restart", []*framework.Node{restarted})
		draRequireClaim(ctx, t, c, d, pods[restarted.Name], restarted)
	}
}

// draDriverKilled deletes each driver's DaemonSet leaving its pods, then
// kills every driver on node killed (SIGKILL) at once and deletes their
// pods: the node's slices of each stay for upstream's 30 s grace period,
// then go; the other nodes' stay.
func draDriverKilled(ctx context.Context, t *testing.T, c *framework.Cluster, ds []*draDriver, killed *framework.Node, regDir string) {
	victims := map[*draDriver]*corev1.Pod{}
	for _, d := range ds {
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
		if victims[d] = draInstances(ctx, t, c, d)[killed.Name]; victims[d] == nil {
			t.Fatalf("no %s instance on node %s", d.label, killed.Name)
		}
	}
	killedAt := map[*draDriver]time.Time{}
	for _, d := range ds {
		killedAt[d] = draKill(ctx, t, c, d, victims[d])
	}
	for _, d := range ds {
		draRemoveSocketsAtEnd(t, d, killed, regDir)
	}
	for _, d := range ds {
		var goneAfter time.Duration
		err := framework.Poll(t.Context(), 90*time.Second, func(context.Context) bool {
			got, err := draSlices(ctx, c, d)
			goneAfter = time.Since(killedAt[d])
			return err == nil && got[killed.Name] == 0
		})
		if err != nil {
			t.Fatalf("the %s slices of node %s are still there 90 s after its driver was killed", d.label, killed.Name)
		}
		t.Logf("%s slices of node %s went %s after its driver was killed", d.label, killed.Name, goneAfter.Round(time.Millisecond))
		// Upstream's grace period runs from the kubelet losing the
		// driver, after the kill; 1 s is left for the timers' granularity.
		if goneAfter < 29*time.Second {
			t.Errorf("the %s slices of node %s went %s after its driver was killed, before upstream's 30 s grace period", d.label, killed.Name, goneAfter.Round(time.Millisecond))
		}
		got, _ := draSlices(ctx, c, d)
		for _, n := range c.Nodes {
			if n != killed && got[n.Name] != d.devices {
				t.Errorf("node %s publishes %d %s devices after the drivers on %s were killed, want %d", n.Name, got[n.Name], d.label, killed.Name, d.devices)
			}
		}
	}
}

// draRemoveSocketsAtEnd removes, when t ends, the sockets the killed driver
// left on node, as an operator would once the driver is gone for good: they
// would otherwise stay registered for the rest of the suite.
func draRemoveSocketsAtEnd(t *testing.T, d *draDriver, node *framework.Node, regDir string) {
	left, _ := filepath.Glob(filepath.Join(node.HostPath(t, regDir), d.name+"-*-reg.sock"))
	t.Logf("registration sockets left on %s by the killed %s: %d", node.Name, d.label, len(left))
	dataSocks, _ := filepath.Glob(filepath.Join(node.HostPath(t, framework.KubeletRootDir), "plugins", d.name, "*.sock"))
	t.Cleanup(func() {
		for _, f := range append(left, dataSocks...) {
			_ = os.Remove(f)
		}
	})
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
