//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/nodeplug/nodeplug/pkg/localpv/jobs"
	"github.com/nodeplug/nodeplug/pkg/util/testutil"
	"github.com/nodeplug/nodeplug/test/e2e/framework"
)

const keepClass = "local-keep"

// TestMultiNodeLocalPVNodeDeleted deletes a node the way an operator or a
// cloud node pool does (its kubelet stopped, its Node deleted) while two
// StatefulSets use local PVs on it: one of a class with
// releaseClaimsOfDeletedNodesAfter, one of a class without. The first's
// claim is released after the delay and its pod runs on another node's PV;
// the second's claim and PV stay as they are. When the node comes back with
// its disks, the released claim's disk is held, neither published nor wiped,
// until an admin keeps it (with its data) or wipes it.
func TestMultiNodeLocalPVNodeDeleted(t *testing.T) {
	c := framework.Connect(t)
	c.RequireNodes(t, 3)
	ctx := t.Context()
	gone, other := c.Nodes[1], c.Nodes[2]
	if gone.OnHost() {
		testutil.MissingCapability(t, "node %s is the host, whose kubelet the test must not stop", gone.Name)
	}
	dGone, dOther := newLPVDisksOn(t, gone), newLPVDisksOn(t, other)
	relDir := dGone.addDir("rel0")
	keepDir := dGone.addKeepDir("keep0")
	applyStorageClass(ctx, t, c, keepClass)
	deployLPVWith(ctx, t, c, dGone, map[string]string{"storageClassMap": fmt.Sprintf(`%s:
  hostDir: %s
  mountDir: /mnt/fast-disks
  releaseClaimsOfDeletedNodesAfter: 1m
%s:
  hostDir: %s
  mountDir: /mnt/block-disks
`, fastClass, dGone.fast, keepClass, dGone.block)})
	waitForPVOn(ctx, t, c, gone.Name, keepDir, "", corev1.VolumeAvailable)

	released := createStatefulSet(ctx, t, c, "e2e-rel", fastClass, gone.Name)
	kept := createStatefulSet(ctx, t, c, "e2e-keep", keepClass, gone.Name)
	c.WaitForPod(ctx, t, released+"-0", 120*time.Second, corev1.PodRunning)
	c.WaitForPod(ctx, t, kept+"-0", 120*time.Second, corev1.PodRunning)
	keptClaim := claimOf(ctx, t, c, "data-"+kept+"-0")
	relClaim := claimOf(ctx, t, c, "data-"+released+"-0")
	// The other node gets a disk of the releasing class, for the pod to move to.
	dOther.addDir("rel1")

	marker := dGone.host(filepath.Join(dGone.base, "src", "rel0", "tenant-data")) // the directory bind-mounted at relDir
	if err := os.WriteFile(marker, []byte("tenant A"), 0o600); err != nil {
		t.Fatal(err)
	}
	start, restart := deleteNode(ctx, t, c, gone)
	var pod *corev1.Pod
	if err := framework.Poll(t.Context(), 5*time.Minute, func(context.Context) bool {
		p, err := c.Client.CoreV1().Pods("default").Get(ctx, released+"-0", metav1.GetOptions{})
		pod = p
		return err == nil && p.Status.Phase == corev1.PodRunning && p.Spec.NodeName == other.Name
	}); err != nil {
		out, _ := c.Kubectl(ctx, "get", "pods,pvc,pv", "-o", "wide")
		ev, _ := c.Kubectl(ctx, "get", "events", "-A")
		t.Fatalf("pod %s-0 does not run on %s after its node was deleted: %v\n%s\n%s", released, other.Name, err, out, ev)
	}
	t.Logf("pod %s runs on %s %s after node %s was deleted", pod.Name, pod.Spec.NodeName, time.Since(start).Round(time.Second), gone.Name)
	if now := claimOf(ctx, t, c, "data-"+released+"-0"); now.UID == relClaim.UID {
		t.Errorf("claim %s was not released", relClaim.Name)
	}
	warning := framework.EventQuery{Kind: "PersistentVolumeClaim", Name: relClaim.Name, Reason: "NodeDeleted", Type: corev1.EventTypeWarning}
	if _, err := framework.WaitForEvent(ctx, c.Client, warning, 60*time.Second); err != nil {
		t.Error(err)
	}

	now := claimOf(ctx, t, c, keptClaim.Name)
	if now.UID != keptClaim.UID || now.Spec.VolumeName != keptClaim.Spec.VolumeName {
		t.Errorf("claim %s of the class without node cleanup changed: %s/%s, was %s/%s", keptClaim.Name, now.UID,
			now.Spec.VolumeName, keptClaim.UID, keptClaim.Spec.VolumeName)
	}
	if pv, err := c.Client.CoreV1().PersistentVolumes().Get(ctx, keptClaim.Spec.VolumeName, metav1.GetOptions{}); err != nil ||
		pv.DeletionTimestamp != nil {
		t.Errorf("PV %s of the class without node cleanup: %v %v", keptClaim.Spec.VolumeName, err, pv)
	}

	// The machine comes back with its disk, as a node rebuilt by Cluster API
	// or Metal3 does: the released claim's disk is held, neither published
	// nor wiped, until an admin keeps it.
	restart()
	expectHeldThenKept(ctx, t, c, gone.Name, relDir, marker)
}

// expectHeldThenKept waits for the returned disk at hostPath on node to be
// held (a PV labelled held, a DiskHeld Event, no cleanup Job, the tenant's
// file in place), then keeps it as an admin does and waits for the PV to
// be Available with the file still there.
func expectHeldThenKept(ctx context.Context, t *testing.T, c *framework.Cluster, node, hostPath, marker string) {
	t.Helper()
	var held *corev1.PersistentVolume
	if err := framework.Poll(t.Context(), 5*time.Minute, func(context.Context) bool {
		held = findPVOn(ctx, t, c, node, hostPath)
		return held != nil && held.Labels[jobs.LabelHeld] == "true"
	}); err != nil {
		out, _ := c.Kubectl(ctx, "get", "pv,jobs,nodes", "-A", "-o", "wide")
		t.Fatalf("the returned disk at %s is not held: %v\n%s", hostPath, err, out)
	}
	q := framework.EventQuery{Kind: "PersistentVolume", Name: held.Name, Reason: "DiskHeld", Type: corev1.EventTypeWarning}
	if _, err := framework.WaitForEvent(ctx, c.Client, q, 60*time.Second); err != nil {
		t.Error(err)
	}
	js, err := c.Client.BatchV1().Jobs(lpvNamespace).List(ctx, metav1.ListOptions{
		LabelSelector: jobs.LabelVolumeID + "=" + held.Labels[jobs.LabelVolumeID]})
	if err != nil || len(js.Items) != 0 {
		t.Fatalf("cleanup Jobs of the held disk: %v %v", js, err)
	}
	if raw, err := os.ReadFile(marker); err != nil || string(raw) != "tenant A" {
		t.Fatalf("the held disk's data: %q %v", raw, err)
	}
	t.Logf("the returned disk at %s is held as PV %s", hostPath, held.Name)
	if _, err := c.Kubectl(ctx, "annotate", "pv", held.Name, jobs.AnnAdminAction+"="+jobs.AdminActionKeep); err != nil {
		t.Fatal(err)
	}
	kept := waitForPVOn(ctx, t, c, node, hostPath, "", corev1.VolumeAvailable)
	if kept.UID != held.UID || kept.Labels[jobs.LabelHeld] != "" {
		t.Errorf("kept PV %s (held %s) still held: %v", kept.Name, held.Name, kept.Labels)
	}
	if raw, err := os.ReadFile(marker); err != nil || string(raw) != "tenant A" {
		t.Errorf("the kept disk's data: %q %v", raw, err)
	}
}

// addKeepDir bind-mounts a new directory at block/<name> in the node, for a
// second directory class that uses the block directory.
func (d *lpvDisks) addKeepDir(name string) string {
	d.t.Helper()
	src, target := d.base+"/src/"+name, d.block+"/"+name
	for _, dir := range []string{src, target} {
		if err := os.MkdirAll(d.host(dir), 0o755); err != nil {
			d.t.Fatal(err)
		}
	}
	d.n.Run(context.Background(), d.t, "mount", "--bind", src, target)
	return target
}

// createStatefulSet creates a one-replica StatefulSet whose claim template
// uses class, placed on node at first, and deletes it when the test ends.
func createStatefulSet(ctx context.Context, t *testing.T, c *framework.Cluster, name, class, node string) string {
	t.Helper()
	labels := map[string]string{"app": name}
	pod := framework.BusyboxPod(name, "sleep 3600")
	ss := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: appsv1.StatefulSetSpec{
			Replicas: ptr.To[int32](1), Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: pod.Spec},
			VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Name: "data"},
				Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
					StorageClassName: ptr.To(class),
					Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Mi")}}}}},
		}}
	ss.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyAlways
	ss.Spec.Template.Spec.TerminationGracePeriodSeconds = ptr.To[int64](0)
	ss.Spec.Template.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}
	ss.Spec.Template.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
		PreferredDuringSchedulingIgnoredDuringExecution: []corev1.PreferredSchedulingTerm{{Weight: 100,
			Preference: corev1.NodeSelectorTerm{MatchFields: []corev1.NodeSelectorRequirement{{
				Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{node}}}}}}}}
	if _, err := c.Client.AppsV1().StatefulSets("default").Create(ctx, ss, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		bg := context.Background()
		_, _ = c.Kubectl(bg, "delete", "statefulset", name, "--wait", "--timeout=60s")
		_, _ = c.Kubectl(bg, "delete", "pod", name+"-0", "--force", "--grace-period=0", "--ignore-not-found")
		_, _ = c.Kubectl(bg, "delete", "pvc", "data-"+name+"-0", "--wait", "--timeout=60s", "--ignore-not-found")
	})
	return name
}

func claimOf(ctx context.Context, t *testing.T, c *framework.Cluster, name string) *corev1.PersistentVolumeClaim {
	t.Helper()
	var pvc *corev1.PersistentVolumeClaim
	if err := framework.Poll(t.Context(), 60*time.Second, func(context.Context) bool {
		var err error
		pvc, err = c.Client.CoreV1().PersistentVolumeClaims("default").Get(ctx, name, metav1.GetOptions{})
		return err == nil && pvc.Spec.VolumeName != ""
	}); err != nil {
		t.Fatalf("claim %s is not bound: %v", name, err)
	}
	return pvc
}

// deleteNode stops n's kubelet and deletes its Node, as removing a machine
// from a cluster does. It returns when the Node was deleted, with a function
// that starts the kubelet again, which registers the Node anew; the test's
// end calls it if the test did not.
func deleteNode(ctx context.Context, t *testing.T, c *framework.Cluster, n *framework.Node) (time.Time, func()) {
	t.Helper()
	var once sync.Once
	if n.HasServiceManager() {
		serviceJob(ctx, t, c, n, "kubelet", "stop")
		restart := func() { once.Do(func() { serviceJob(context.Background(), t, c, n, "kubelet", "start") }) }
		t.Cleanup(restart)
		if _, err := c.Kubectl(ctx, "delete", "node", n.Name, "--wait", "--timeout=60s"); err != nil {
			t.Fatal(err)
		}
		return time.Now(), restart
	}
	pidFile := n.PIDFile(t, "kubelet")
	raw, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid := strings.TrimSpace(string(raw))
	argv, env := procList(t, pid, "cmdline"), procList(t, pid, "environ")
	stopPID(ctx, t, "kubelet", pid)
	restart := func() { once.Do(func() { startAs(context.Background(), t, c, n, "kubelet", pidFile, argv, env) }) }
	t.Cleanup(restart)
	if _, err := c.Kubectl(ctx, "delete", "node", n.Name, "--wait", "--timeout=60s"); err != nil {
		t.Fatal(err)
	}
	return time.Now(), restart
}
