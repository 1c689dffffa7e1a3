//go:build e2e

package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodeplug/nodeplug/test/e2e/framework"
)

// TestMountPodAttach: an attachable flex driver that only the mount pod
// has. The controller-manager runs attach and detach in the pod through
// pods/exec; the kubelet runs waitforattach and mountdevice in it through
// the CRI.
func TestMountPodAttach(t *testing.T) {
	c := framework.Connect(t)
	c.RequireFlag(t, "kube-controller-manager", "--experimental-mount-namespace=kube-mount")
	c.RequireFlag(t, "kubelet", "--experimental-mount-namespace=kube-mount")
	ctx := t.Context()
	if _, err := os.Stat(c.Node.HostPath(t, filepath.Join(c.Node.FlexDir(), "nodeplug.io~attach"))); err == nil {
		t.Fatal("nodeplug.io/attach is installed in the flex plugin dir; the test needs it only in the mount pod")
	}
	t.Cleanup(func() { muRemove(t, c) })
	mp := muDeploy(ctx, t, c)

	pod := framework.BusyboxPod("mu-attach", "cat /data/device && sleep 3600")
	pod.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "v", MountPath: "/data"}}
	pod.Spec.Volumes = []corev1.Volume{{Name: "v", VolumeSource: corev1.VolumeSource{FlexVolume: &corev1.FlexVolumeSource{
		Driver: "nodeplug.io/attach"}}}}
	c.CreatePod(ctx, t, pod)
	c.WaitForPod(ctx, t, "mu-attach", 150*time.Second, corev1.PodRunning)
	if !muAttached(ctx, t, c) {
		t.Fatal("the node does not report the volume attached")
	}
	log := muDriverLog(ctx, t, c, mp)
	for _, want := range []string{" attach ", " waitforattach ", " mountdevice "} {
		if !strings.Contains(log, want) {
			t.Errorf("the mount pod's driver log has no%scall:\n%s", want, log)
		}
	}
	out, err := c.Kubectl(ctx, "exec", "mu-attach", "--", "cat", "/data/device")
	// The driver names the device after the volume ("v") in attach; the
	// kubelet hands that device path to mountdevice, which writes it here.
	if err != nil || strings.TrimSpace(out) != "/dev/nodeplug-attach/v" {
		t.Fatalf("the consumer's volume holds %q, %v", out, err)
	}

	c.DeletePod(t, "mu-attach")
	err = framework.Poll(ctx, 150*time.Second, func(ctx context.Context) bool {
		return !muAttached(ctx, t, c)
	}, framework.PollEvery(500*time.Millisecond))
	if err != nil {
		t.Fatal("the volume is still attached 150 s after its consumer was deleted")
	}
	// Upstream's attach/detach controller takes the volume out of the
	// Node's status before it calls detach, so the call may still run.
	err = framework.Poll(ctx, 60*time.Second, func(ctx context.Context) bool {
		log = muDriverLog(ctx, t, c, mp)
		return strings.Contains(log, " detach v ")
	})
	if err != nil {
		t.Fatalf("the mount pod's driver log has no detach:\n%s", log)
	}
}

func muAttached(ctx context.Context, t testing.TB, c *framework.Cluster) bool {
	ok, err := c.NodeAttached(ctx, c.NodeName, func(v string) bool { return strings.Contains(v, "nodeplug.io/attach") })
	if err != nil {
		t.Fatal(err)
	}
	return ok
}

func muDriverLog(ctx context.Context, t testing.TB, c *framework.Cluster, mp string) string {
	out, err := c.Kubectl(ctx, "-n", muNamespace, "exec", mp, "--", "cat", "/var/log/nodeplug-attach/driver.log")
	if err != nil {
		t.Fatalf("driver log: %v", err)
	}
	return out
}

// TestMountPodExecRBAC: the controller-manager's credentials, and the
// ServiceAccount its mount pod client uses, may exec into pods in
// kube-mount only.
func TestMountPodExecRBAC(t *testing.T) {
	c := framework.Connect(t)
	c.RequireFlag(t, "kube-controller-manager", "--experimental-mount-namespace=kube-mount")
	ctx := t.Context()
	c.CreatePod(ctx, t, framework.BusyboxPod("mu-victim", "sleep 3600"))
	c.WaitForPod(ctx, t, "mu-victim", 60*time.Second, corev1.PodRunning)
	token, err := c.Kubectl(ctx, "-n", "kube-system", "create", "token", "nodeplug-mount-pods")
	if err != nil {
		t.Fatal(err)
	}
	kcm := filepath.Join(c.Dir(t), "pki", "kube-controller-manager.kubeconfig")
	creds := map[string][]string{
		"controller-manager user":     {"--kubeconfig", kcm},
		"nodeplug-mount-pods account": {"--kubeconfig", os.DevNull, "--token", strings.TrimSpace(token), "--server", c.Config.Host, "--certificate-authority", c.CAFile(t)},
	}
	for name, args := range creds {
		t.Run(name, func(t *testing.T) {
			kubectl := func(rest ...string) (string, error) {
				return c.Kubectl(ctx, append(append([]string{}, args...), rest...)...)
			}
			if out, _ := kubectl("auth", "can-i", "create", "pods", "--subresource=exec", "-n", muNamespace); strings.TrimSpace(out) != "yes" {
				t.Errorf("may not exec in %s: %q", muNamespace, out)
			}
			if out, _ := kubectl("auth", "can-i", "create", "pods", "--subresource=exec", "-n", "default"); strings.TrimSpace(out) != "no" {
				t.Errorf("may exec in default: %q", out)
			}
			out, err := kubectl("-n", "default", "exec", "mu-victim", "--", "true")
			if err == nil || !strings.Contains(err.Error(), "Forbidden") && !strings.Contains(err.Error(), "forbidden") {
				t.Errorf("exec into default/mu-victim: %q, %v; want Forbidden", out, err)
			}
		})
	}
}
