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

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeplug/nodeplug/test/e2e/framework"
)

// TestMountPodWithoutPropagation is an operator's mistake: a mount
// DaemonSet that mounts the kubelet root dir without mountPropagation
// (Kubernetes' default is None). Mounts made in such a pod stay in it, and
// the consumer would write to the empty host directory under them. The pod
// must not serve: it gets a Warning Event and the kubelet's gauge counts
// it, the consumer waits with an event that names the fix, and once the
// DaemonSet is fixed the consumer runs on its real volume.
func TestMountPodWithoutPropagation(t *testing.T) {
	c := framework.Connect(t)
	c.RequireFlag(t, "kubelet", "--experimental-mount-namespace=kube-mount")
	ctx := t.Context()
	t.Cleanup(func() { muRemove(t, c) })

	var ds appsv1.DaemonSet
	muManifest(t, "daemonset.yaml", c.Node.RootDir(), &ds)
	mounts := ds.Spec.Template.Spec.Containers[0].VolumeMounts
	for i := range mounts {
		mounts[i].MountPropagation = nil
	}
	muCreateDaemonSet(ctx, t, c, &ds)
	mp := muWaitReady(ctx, t, c)

	// The user creates the claim and its consumer at once.
	muLocalClaim(ctx, t, c, "mu-noprop", muLoop(t, c, "noprop"))
	c.CreatePod(ctx, t, muConsumer("mu-noprop", corev1.VolumeSource{
		PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "mu-noprop"}}))

	ev := c.RequireEvent(ctx, t, framework.EventQuery{Namespace: muNamespace, Name: mp, Reason: "MountPodMisconfigured"}, 60*time.Second).Message
	for _, want := range []string{"mountPropagation: Bidirectional", c.Node.RootDir()} {
		if !strings.Contains(ev, want) {
			t.Errorf("the mount pod's event %q does not say %q", ev, want)
		}
	}
	if n := muKubeletMetric(ctx, t, c, "nodeplug_mountpod_misconfigured_pods"); n != 1 {
		t.Errorf("nodeplug_mountpod_misconfigured_pods = %v, want 1", n)
	}
	msg := c.RequireEvent(ctx, t, framework.EventQuery{Namespace: "default", Name: "mu-noprop", MessageContains: "do not mount the kubelet root dir"}, 90*time.Second).Message
	if !strings.Contains(msg, "kube-mount/"+mp) || !strings.Contains(msg, "mountPropagation: Bidirectional") {
		t.Errorf("the consumer's event %q does not name the pod and the fix", msg)
	}
	if p, err := c.Client.CoreV1().Pods("default").Get(ctx, "mu-noprop", metav1.GetOptions{}); err != nil || p.Status.Phase != corev1.PodPending {
		t.Fatalf("the consumer is %v (%v), want Pending while no mount pod qualifies", p.Status.Phase, err)
	}

	// The operator fixes the DaemonSet (OnDelete: the old pod goes by hand).
	muRemove(t, c)
	muDeploy(ctx, t, c)
	c.WaitForPod(ctx, t, "mu-noprop", 150*time.Second, corev1.PodRunning)
	muRequireExt4(t, c, "mu-noprop")
	if n := muKubeletMetric(ctx, t, c, "nodeplug_mountpod_misconfigured_pods"); n != 0 {
		t.Errorf("after the fix nodeplug_mountpod_misconfigured_pods = %v, want 0", n)
	}
}

// TestFlexLongMountDevice runs upstream's e2e driver
// attachable-with-long-mount, read from the pinned module: its mountdevice
// mounts a tmpfs, works for 120 s, then writes index.html. A kubelet that
// cut the call short and took the tmpfs for a finished mount would run the
// consumer on a half-made volume without index.html. Upstream sets no bound
// on mountdevice, and neither does nodeplug by default.
func TestFlexLongMountDevice(t *testing.T) {
	c := framework.Connect(t)
	requireFlexDiscovery(t, c)
	ctx := t.Context()
	out, err := exec.CommandContext(ctx, "go", "list", "-m", "-f", "{{.Dir}}", "k8s.io/kubernetes").Output()
	if err != nil {
		t.Fatalf("locating the pinned k8s.io/kubernetes module: %v", err)
	}
	script, err := os.ReadFile(filepath.Join(strings.TrimSpace(string(out)), "test", "e2e", "testing-manifests", "flexvolume", "attachable-with-long-mount"))
	if err != nil {
		t.Fatal(err)
	}
	installAttachableDriver(t, c, "e2e.long~attachable-with-long-mount", "attachable-with-long-mount", string(script))
	pod := flexPod("e2e-long-mount", "e2e.long/attachable-with-long-mount", nil)
	pod.Spec.Containers[0].Command = []string{"sh", "-c", "cat /data/index.html && sleep 3600"}
	c.CreatePod(ctx, t, pod)
	t.Cleanup(func() {
		// Before the driver goes: its unmountdevice must run.
		c.DeletePod(t, pod.Name)
		_ = framework.Poll(context.Background(), 90*time.Second, func(context.Context) bool {
			out, _ := c.Node.Command(context.Background(), "findmnt", "-rn", "-o", "TARGET").Output()
			return !strings.Contains(string(out), "attachable-with-long-mount")
		}, framework.PollEvery(time.Second))
	})
	got := c.WaitForPod(ctx, t, pod.Name, 5*time.Minute, corev1.PodRunning)
	body, err := c.Kubectl(ctx, "exec", pod.Name, "--", "cat", "/data/index.html")
	if err != nil || strings.TrimSpace(body) != "Hello from flexvolume!" {
		t.Fatalf("the consumer runs on a half-made volume: index.html %q, %v", body, err)
	}
	for _, st := range got.Status.ContainerStatuses {
		if st.RestartCount != 0 {
			t.Errorf("the consumer restarted %d times: it started before its volume was ready", st.RestartCount)
		}
	}
}

// muCreateDaemonSet creates the namespace and ds.
func muCreateDaemonSet(ctx context.Context, t testing.TB, c *framework.Cluster, ds *appsv1.DaemonSet) {
	t.Helper()
	var ns corev1.Namespace
	muManifest(t, "namespace.yaml", "", &ns)
	if _, err := c.Client.CoreV1().Namespaces().Create(ctx, &ns, metav1.CreateOptions{}); err != nil && !strings.Contains(err.Error(), "already exists") {
		t.Fatalf("create namespace: %v", err)
	}
	if _, err := c.Client.AppsV1().DaemonSets(muNamespace).Create(ctx, ds, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create daemonset: %v", err)
	}
}
