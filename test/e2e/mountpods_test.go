//go:build e2e

package e2e

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodeplug/nodeplug/test/e2e/framework"
)

const muLocalLabel = "mount.kubernetes.io/local-volume=true"

// TestMountUtilitiesInPods is the mount-utilities user story on a kubelet
// started with --experimental-mount-namespace=kube-mount and a PATH without
// mkfs, fsck and blkid. The steps share one DaemonSet's life cycle and run
// in order.
func TestMountUtilitiesInPods(t *testing.T) {
	c := framework.Connect(t)
	c.RequireFlag(t, "kubelet", "--experimental-mount-namespace=kube-mount")
	ctx := t.Context()
	t.Cleanup(func() { muRemove(t, c) })

	t.Run("the kubelet has no mkfs.ext4, fsck.ext4 or blkid", func(t *testing.T) {
		pid, err := os.ReadFile(c.PIDFile(t, "kubelet"))
		if err != nil {
			t.Fatal(err)
		}
		path := ""
		for _, kv := range procList(t, strings.TrimSpace(string(pid)), "environ") {
			if v, ok := strings.CutPrefix(kv, "PATH="); ok {
				path = v
			}
		}
		if path == "" {
			t.Fatal("the kubelet has no PATH")
		}
		for _, tool := range []string{"mkfs.ext4", "fsck.ext4", "blkid", "mke2fs", "e2fsck"} {
			for _, dir := range filepath.SplitList(path) {
				if _, err := os.Stat(filepath.Join(dir, tool)); err == nil {
					t.Errorf("%s is in the kubelet's PATH (%s)", tool, dir)
				}
			}
		}
	})

	t.Run("no mount pod: the consumer waits with an event naming the label, and mounts once the pod is Ready", func(t *testing.T) {
		// A pod with the right label outside kube-mount is never used.
		impostor := framework.BusyboxPod("mu-impostor", "sleep 3600")
		impostor.Labels = map[string]string{"mount.kubernetes.io/local-volume": "true"}
		c.CreatePod(ctx, t, impostor)
		c.WaitForPod(ctx, t, "mu-impostor", 60*time.Second, corev1.PodRunning)

		muLocalClaim(ctx, t, c, "mu-late", muLoop(t, c, "late"))
		c.CreatePod(ctx, t, muConsumer("mu-late", corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "mu-late"}}))
		msg := c.RequireEvent(ctx, t, framework.EventQuery{Namespace: "default", Name: "mu-late", MessageContains: muLocalLabel}, 90*time.Second).Message
		for _, want := range []string{"namespace kube-mount", "blkid is not installed on the host"} {
			if !strings.Contains(msg, want) {
				t.Errorf("event %q does not say %q", msg, want)
			}
		}
		muDeploy(ctx, t, c)
		c.WaitForPod(ctx, t, "mu-late", 150*time.Second, corev1.PodRunning)
		muRequireExt4(t, c, "mu-late")
	})

	t.Run("a block-backed local PV with fsType ext4 is formatted and mounted in the mount pod", func(t *testing.T) {
		before := muKubeletMetric(ctx, t, c, "nodeplug_mountpod_exec_total", `where="pod"`, `utility="mkfs.ext4"`, `result="success"`)
		// where="none" counts lookups that found neither a pod nor the
		// utility on the host: a routing that fell through to the host.
		noneBefore := muKubeletMetric(ctx, t, c, "nodeplug_mountpod_exec_total", `where="none"`)
		muDeploy(ctx, t, c)
		muLocalClaim(ctx, t, c, "mu-ext4", muLoop(t, c, "ext4"))
		c.CreatePod(ctx, t, muConsumer("mu-ext4", corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "mu-ext4"}}))
		c.WaitForPod(ctx, t, "mu-ext4", 120*time.Second, corev1.PodRunning)
		muRequireExt4(t, c, "mu-ext4")
		after := muKubeletMetric(ctx, t, c, "nodeplug_mountpod_exec_total", `where="pod"`, `utility="mkfs.ext4"`, `result="success"`)
		if after-before != 1 {
			t.Errorf("mkfs.ext4 ran %v times in the mount pod, want 1", after-before)
		}
		// mkfs cannot run on the host: the kubelet's PATH lacks it (the first
		// step), so a host run would fail the mount rather than count here.
		if n := muKubeletMetric(ctx, t, c, "nodeplug_mountpod_exec_total", `where="none"`) - noneBefore; n != 0 {
			t.Errorf("%v utility lookups fell through to the host while the mount pod was Ready", n)
		}
	})

	t.Run("a FUSE flex driver that only the mount pod has serves a consumer, across a kubelet restart", func(t *testing.T) {
		if _, err := os.Stat(c.Node.HostPath(t, filepath.Join(c.Node.FlexDir(), "nodeplug.io~fuse"))); err == nil {
			t.Fatal("nodeplug.io/fuse is installed on the host; the test needs it only in the mount pod")
		}
		mp := muDeploy(ctx, t, c)
		c.CreatePod(ctx, t, muConsumer("mu-fuse", corev1.VolumeSource{FlexVolume: &corev1.FlexVolumeSource{Driver: "nodeplug.io/fuse"}}))
		pod := c.WaitForPod(ctx, t, "mu-fuse", 120*time.Second, corev1.PodRunning)
		target := filepath.Join(c.Node.RootDir(), "pods", string(pod.UID), "volumes", "nodeplug.io~fuse", "v")
		if typ := c.Node.MountType(ctx, target); !strings.HasPrefix(typ, "fuse") {
			t.Fatalf("%s on node %s is %q, want a fuse mount", target, c.NodeName, typ)
		}
		muRequireFuseServedInPod(ctx, t, c, mp, target)

		muRestartKubelet(ctx, t, c)
		// The restarted kubelet answers exec once it has the pod again.
		var got string
		err := framework.Poll(ctx, 60*time.Second, func(ctx context.Context) bool {
			var err error
			got, err = c.Kubectl(ctx, "exec", "mu-fuse", "--", "cat", "/data/f")
			return err == nil
		})
		if err != nil || strings.TrimSpace(got) != "written-by-mu-fuse" {
			t.Fatalf("after the kubelet restart the consumer reads %q, %v", got, err)
		}
		// The restarted kubelet reconstructed the volume with the pod-served
		// driver: its volume manager holds it as mounted, under the driver's
		// plugin name (upstream's volume_manager_total_volumes gauge).
		err = framework.Poll(ctx, 60*time.Second, func(ctx context.Context) bool {
			return muKubeletMetric(ctx, t, c, "volume_manager_total_volumes", `plugin_name="nodeplug.io/fuse"`, `state="actual_state_of_world"`) >= 1
		})
		if err != nil {
			t.Errorf("the restarted kubelet does not hold the pod-served driver's volume as mounted")
		}
		if log := muKubeletLogSinceRestart(t, c); !strings.Contains(log, "Flexvolume drivers of mount pods loaded") {
			t.Errorf("the restarted kubelet did not load the pod-served driver before its volume manager started")
		}
		c.DeletePod(t, "mu-fuse")
		// The pod object goes at once (grace period 0); the kubelet tears
		// the volume down after.
		err = framework.Poll(ctx, 60*time.Second, func(context.Context) bool {
			return c.Node.MountType(ctx, target) == ""
		})
		if err != nil {
			t.Fatalf("%s is still mounted (%s) 60 s after the consumer was deleted", target, c.Node.MountType(ctx, target))
		}
		out, err := c.Kubectl(ctx, "-n", muNamespace, "exec", mp, "--", "cat", "/var/log/nodeplug-fuse/driver.log")
		if err != nil || !strings.Contains(out, " unmount "+target) {
			t.Fatalf("the mount pod's driver did not unmount %s:\n%s %v", target, out, err)
		}
	})
}

// muRequireFuseServedInPod: the mount pod's FUSE driver logged the mount
// of target, its backing directory holds exactly the consumer's file "f",
// and its daemon runs in the pod.
func muRequireFuseServedInPod(ctx context.Context, t *testing.T, c *framework.Cluster, mp, target string) {
	t.Helper()
	inPod := func(args ...string) string {
		out, err := c.Kubectl(ctx, append([]string{"-n", muNamespace, "exec", mp, "--"}, args...)...)
		if err != nil {
			t.Fatalf("in the mount pod, %v: %v\n%s", args, err, out)
		}
		return out
	}
	if log := inPod("cat", "/var/log/nodeplug-fuse/driver.log"); !strings.Contains(log, " mount "+target) {
		t.Fatalf("the mount pod's driver did not mount %s:\n%s", target, log)
	}
	backing := "/var/lib/nodeplug-fuse/" + strings.ReplaceAll(strings.TrimPrefix(target, "/"), "/", "_")
	if files := strings.Fields(inPod("ls", backing)); !slices.Equal(files, []string{"f"}) {
		t.Fatalf("the FUSE backing directory %s in the mount pod holds %q, want exactly the consumer's file f", backing, files)
	}
	pids := strings.Fields(inPod("sh", "-c", "pidof nodeplug-fuse-loopback || true"))
	if len(pids) == 0 {
		t.Fatal("no nodeplug-fuse-loopback daemon runs in the mount pod")
	}
	for _, p := range pids {
		if _, err := strconv.Atoi(p); err != nil {
			t.Fatalf("pidof printed %q", pids)
		}
	}
}

// muRequireExt4: the consumer's /data is an ext4 mount holding what it wrote.
func muRequireExt4(t *testing.T, c *framework.Cluster, pod string) {
	t.Helper()
	out, err := c.Kubectl(t.Context(), "exec", pod, "--", "sh", "-c", "grep ' /data ' /proc/mounts; cat /data/f")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, " ext4 ") || !strings.Contains(out, "written-by-"+pod) {
		t.Fatalf("pod %s: /data is not an ext4 volume holding its file:\n%s", pod, out)
	}
}
