//go:build e2e

package e2e

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodeplug/nodeplug/test/e2e/framework"
)

const muTaintKey = "nodeplug.io/mount-utilities-upgrade"

// TestMountUtilitiesUpgrade: mount-utilities-upgrade replaces the
// node's mount pod with a new image version while a FUSE volume it serves
// was in use, and refuses while a consumer that tolerates its taint still
// uses one.
func TestMountUtilitiesUpgrade(t *testing.T) {
	c := framework.Connect(t)
	c.RequireFlag(t, "kubelet", "--experimental-mount-namespace=kube-mount")
	ctx := t.Context()
	t.Setenv("MU_POLL_INTERVAL", "0.5")
	t.Cleanup(func() { muRemove(t, c) })
	old := muDeploy(ctx, t, c)
	c.CreatePod(ctx, t, muConsumer("mu-up-1", corev1.VolumeSource{FlexVolume: &corev1.FlexVolumeSource{Driver: "nodeplug.io/fuse"}}))
	c.WaitForPod(ctx, t, "mu-up-1", 120*time.Second, corev1.PodRunning)
	muNewVersion(ctx, t, c, 2)

	t.Run("refuses while a consumer that tolerates the taint uses a served volume", func(t *testing.T) {
		tol := muConsumer("mu-up-tol", corev1.VolumeSource{FlexVolume: &corev1.FlexVolumeSource{Driver: "nodeplug.io/fuse"}})
		tol.Spec.Tolerations = []corev1.Toleration{{Key: muTaintKey, Operator: corev1.TolerationOpExists}}
		c.CreatePod(ctx, t, tol)
		c.WaitForPod(ctx, t, "mu-up-tol", 120*time.Second, corev1.PodRunning)
		out, code := muUpgrade(ctx, t, c, "--timeout", "60", c.NodeName)
		if code != 3 || !strings.Contains(out, "mu-up-tol") {
			t.Fatalf("exit %d, want 3 naming mu-up-tol:\n%s", code, out)
		}
		if muTainted(ctx, t, c) {
			t.Errorf("the node keeps the upgrade taint after a refusal")
		}
		if _, err := c.Client.CoreV1().Pods(muNamespace).Get(ctx, old, metav1.GetOptions{}); err != nil {
			t.Errorf("the mount pod %s is gone after a refusal: %v", old, err)
		}
		for _, p := range []string{"mu-up-1", "mu-up-tol"} {
			if got, err := c.Kubectl(ctx, "exec", p, "--", "cat", "/data/f"); err != nil || strings.TrimSpace(got) != "written-by-"+p {
				t.Errorf("consumer %s lost its volume after a refusal: %q, %v", p, got, err)
			}
		}
		c.DeletePod(t, "mu-up-tol")
	})

	t.Run("evicts the consumer, replaces the mount pod with the new version, untaints", func(t *testing.T) {
		// A FUSE mount that a host daemon serves (as a FUSE-based CSI
		// driver's would) propagates into the mount pod; it does not die
		// with the pod, so the drain must not wait for it.
		hostFuse := muHostFuseMount(t, c)
		out, code := muUpgrade(ctx, t, c, "--timeout", "180", c.NodeName)
		if code != 0 {
			t.Fatalf("exit %d:\n%s", code, out)
		}
		if !strings.Contains(out, "not waiting for these FUSE mounts") || !strings.Contains(out, "  "+hostFuse) {
			t.Errorf("the upgrade does not say it leaves out the host's FUSE mount %s:\n%s", hostFuse, out)
		}
		t.Logf("upgrade steps: %v", muSteps(out))
		if _, err := c.Client.CoreV1().Pods("default").Get(ctx, "mu-up-1", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("the consumer that does not tolerate the taint was not evicted: %v", err)
		}
		if muTainted(ctx, t, c) {
			t.Errorf("the node keeps the upgrade taint")
		}
		cur := muWaitReady(ctx, t, c)
		pod, err := c.Client.CoreV1().Pods(muNamespace).Get(ctx, cur, metav1.GetOptions{})
		if err != nil || cur == old || pod.Spec.Containers[0].Image != muImage(2) {
			t.Fatalf("mount pod %s (was %s) runs %v, want %s: %v", cur, old, pod.Spec.Containers, muImage(2), err)
		}
		before := muSnapshotNode(ctx, t, c)
		again, code := muUpgrade(ctx, t, c, c.NodeName)
		if code != 0 || !strings.Contains(again, "up to date: "+cur) {
			t.Errorf("a second run is not a no-op: exit %d, want 0 saying %s is up to date:\n%s", code, cur, again)
		}
		if after := muSnapshotNode(ctx, t, c); !reflect.DeepEqual(after, before) {
			t.Errorf("a second run changed the node or its pods:\nbefore %+v\nafter  %+v\n%s", before, after, again)
		}
		c.CreatePod(ctx, t, muConsumer("mu-up-2", corev1.VolumeSource{FlexVolume: &corev1.FlexVolumeSource{Driver: "nodeplug.io/fuse"}}))
		c.WaitForPod(ctx, t, "mu-up-2", 120*time.Second, corev1.PodRunning)
		log, err := c.Kubectl(ctx, "-n", muNamespace, "exec", cur, "--", "cat", "/var/log/nodeplug-fuse/driver.log")
		if err != nil || !strings.Contains(log, " mount ") {
			t.Fatalf("the new mount pod did not mount the new consumer's volume: %v\n%s", err, log)
		}
	})
}

// muHostFuseMount mounts a FUSE file system served by a daemon of the
// first node (nodeplug-fuse-loopback, run in the node's namespaces) below
// the kubelet root dir, where it propagates into the mount pod, and
// returns its mount point. It is unmounted when t ends.
func muHostFuseMount(t testing.TB, c *framework.Cluster) string {
	t.Helper()
	n := c.Node
	dir := filepath.Join(n.RootDir(), "plugins", "e2e-host-fuse")
	src, mnt := filepath.Join(dir, "src"), filepath.Join(dir, "mnt")
	for _, d := range []string{src, mnt} {
		if err := os.MkdirAll(n.HostPath(t, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	stop := n.StartProcess(t, filepath.Join(c.BinDir, "nodeplug-fuse-loopback"), []string{src, mnt})
	t.Cleanup(func() {
		stop()
		n.UnmountAll(t, mnt)
		_ = os.RemoveAll(n.HostPath(t, dir))
	})
	err := framework.Poll(t.Context(), 10*time.Second, func(ctx context.Context) bool {
		return strings.HasPrefix(n.MountType(ctx, mnt), "fuse")
	}, framework.PollEvery(100*time.Millisecond))
	if err != nil {
		t.Fatalf("the node's FUSE daemon did not mount %s within 10 s", mnt)
	}
	return mnt
}

func muImage(version int) string {
	return framework.Image(fmt.Sprintf("mount-utilities:%d", version))
}

// muNewVersion makes image version v of the mount utilities (a new tag of
// the image local-up built on every node, as a registry would serve a new
// release) and
// sets it in the DaemonSet, whose OnDelete strategy leaves running pods
// alone.
func muNewVersion(ctx context.Context, t testing.TB, c *framework.Cluster, v int) {
	t.Helper()
	for _, n := range c.Nodes {
		out, err := exec.CommandContext(ctx, "ctr", "--address", n.ContainerdSocket(t), "-n", "k8s.io", "images", "tag", "--force", muImage(1), muImage(v)).CombinedOutput()
		if err != nil {
			t.Fatalf("tag %s on node %s: %v: %s", muImage(v), n.Name, err, out)
		}
	}
	if _, err := c.Kubectl(ctx, "-n", muNamespace, "set", "image", "daemonset/"+muDaemonSet, "utilities="+muImage(v)); err != nil {
		t.Fatal(err)
	}
}

// muUpgrade runs mount-utilities-upgrade (from BIN_DIR, built by
// hack/build.sh) and returns its output and exit code. KUBECONFIG and
// MU_POLL_INTERVAL come from the environment.
func muUpgrade(ctx context.Context, t testing.TB, c *framework.Cluster, args ...string) (string, int) {
	t.Helper()
	out, err := exec.CommandContext(ctx, filepath.Join(c.BinDir, "mount-utilities-upgrade"), args...).CombinedOutput()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return string(out), 0
	case errors.As(err, &ee):
		return string(out), ee.ExitCode()
	}
	t.Fatalf("running mount-utilities-upgrade: %v\n%s", err, out)
	return "", -1
}

// muNodeSnapshot is what an upgrade run may change on the node: its
// taints, whether it is cordoned, and its pods (namespace/name to UID; the
// mount pod among them), leaving out pods already being deleted.
type muNodeSnapshot struct {
	Taints        []corev1.Taint
	Unschedulable bool
	Pods          map[string]types.UID
}

func muSnapshotNode(ctx context.Context, t testing.TB, c *framework.Cluster) muNodeSnapshot {
	t.Helper()
	node, err := c.Client.CoreV1().Nodes().Get(ctx, c.NodeName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pods, err := c.Client.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + c.NodeName})
	if err != nil {
		t.Fatal(err)
	}
	s := muNodeSnapshot{Taints: node.Spec.Taints, Unschedulable: node.Spec.Unschedulable, Pods: map[string]types.UID{}}
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil {
			s.Pods[p.Namespace+"/"+p.Name] = p.UID
		}
	}
	return s
}

func muTainted(ctx context.Context, t testing.TB, c *framework.Cluster) bool {
	node, err := c.Client.CoreV1().Nodes().Get(ctx, c.NodeName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, taint := range node.Spec.Taints {
		if taint.Key == muTaintKey {
			return true
		}
	}
	return false
}

var muStepLine = regexp.MustCompile(`^\[[^]]+\] (check|taint|drain|delete|ready|untaint): ([0-9.]+) s$`)

// muSteps returns the seconds of each step mount-utilities-upgrade printed.
func muSteps(out string) map[string]float64 {
	steps := map[string]float64{}
	for _, line := range strings.Split(out, "\n") {
		if m := muStepLine.FindStringSubmatch(strings.TrimSpace(line)); m != nil {
			v, _ := strconv.ParseFloat(m[2], 64)
			steps[m[1]] += v
		}
	}
	return steps
}
