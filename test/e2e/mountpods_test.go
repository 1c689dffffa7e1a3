//go:build e2e

package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/wait"

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
		pid, err := os.ReadFile(filepath.Join(c.Dir, "pids", "kubelet"))
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
		msg := muWaitEvent(ctx, t, c, "mu-late", muLocalLabel, 90*time.Second)
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
		if n := muKubeletMetric(ctx, t, c, "nodeplug_mountpod_exec_total", `utility="mkfs.ext4"`, `where="host"`); n != 0 {
			t.Errorf("mkfs.ext4 ran %v times on the host", n)
		}
	})

	t.Run("a FUSE flex driver that only the mount pod has serves a consumer, across a kubelet restart", func(t *testing.T) {
		if _, err := os.Stat(filepath.Join(c.Dir, "flexvolume", "nodeplug.io~fuse")); err == nil {
			t.Fatal("nodeplug.io/fuse is installed on the host; the test needs it only in the mount pod")
		}
		mp := muDeploy(ctx, t, c)
		c.CreatePod(ctx, t, muConsumer("mu-fuse", corev1.VolumeSource{FlexVolume: &corev1.FlexVolumeSource{Driver: "nodeplug.io/fuse"}}))
		pod := c.WaitForPod(ctx, t, "mu-fuse", 120*time.Second, corev1.PodRunning)
		target := filepath.Join(c.Dir, "kubelet", "pods", string(pod.UID), "volumes", "nodeplug.io~fuse", "v")
		if typ := hostMountType(t, target); !strings.HasPrefix(typ, "fuse") {
			t.Fatalf("%s on the host is %q, want a fuse mount", target, typ)
		}
		out, err := c.Kubectl(ctx, "-n", muNamespace, "exec", mp, "--", "sh", "-c",
			"cat /var/log/nodeplug-fuse/driver.log; echo ---; ls /var/lib/nodeplug-fuse/"+strings.ReplaceAll(strings.TrimPrefix(target, "/"), "/", "_")+"; pidof nodeplug-fuse-loopback")
		if err != nil {
			t.Fatal(err)
		}
		log, rest, _ := strings.Cut(out, "---")
		if !strings.Contains(log, " mount "+target) || !strings.Contains(rest, "f") || len(strings.Fields(rest)) < 2 {
			t.Fatalf("the driver did not mount in the mount pod, or its daemon does not run there:\n%s", out)
		}

		muRestartKubelet(ctx, t, c)
		// The restarted kubelet answers exec once it has the pod again.
		var got string
		err = wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
			got, err = c.Kubectl(ctx, "exec", "mu-fuse", "--", "cat", "/data/f")
			return err == nil, nil
		})
		if err != nil || strings.TrimSpace(got) != "written-by-mu-fuse" {
			t.Fatalf("after the kubelet restart the consumer reads %q, %v", got, err)
		}
		if log := muKubeletLogSinceRestart(t, c); strings.Contains(log, "no volume plugin matched name: nodeplug.io/fuse") {
			t.Errorf("the restarted kubelet could not find the pod-served driver while reconstructing volumes")
		}
		c.DeletePod(t, "mu-fuse")
		// The pod object goes at once (grace period 0); the kubelet tears
		// the volume down after.
		err = wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 60*time.Second, true, func(context.Context) (bool, error) {
			return hostMountType(t, target) == "", nil
		})
		if err != nil {
			t.Fatalf("%s is still mounted (%s) 60 s after the consumer was deleted", target, hostMountType(t, target))
		}
		out, err = c.Kubectl(ctx, "-n", muNamespace, "exec", mp, "--", "cat", "/var/log/nodeplug-fuse/driver.log")
		if err != nil || !strings.Contains(out, " unmount "+target) {
			t.Fatalf("the mount pod's driver did not unmount %s:\n%s %v", target, out, err)
		}
	})
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

// hostMountType returns the type of the mount at path in the host's mount
// namespace, or "".
func hostMountType(t testing.TB, path string) string {
	out, err := exec.Command("findmnt", "-n", "-o", "FSTYPE", "--mountpoint", path).Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}
