//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeplug/nodeplug/pkg/util/testutil"
	"github.com/nodeplug/nodeplug/test/e2e/framework"
)

const (
	defaultClass      = "standard"
	hostpathDriver    = "hostpath.csi.nodeplug.io"
	hostpathTopology  = "topology.hostpath.csi.nodeplug.io/node"
	hostpathDataDir   = "csi-hostpath-data" // below the kubelet's root dir
	hostpathRegSocket = hostpathDriver + "-reg.sock"
)

// TestDefaultStorageClass: local-up's default class (deploy/csi-hostpath)
// provisions a claim that names no class on whichever node its pod is
// scheduled to. On every node: the pod runs and writes to its volume, the
// PV is pinned to that node and its directory is in that node's data dir,
// the driver registered through nodeplug's plugin watcher when the kubelet
// runs it, and deleting the claim deletes the PV and the directory. On the
// first node the kubelet also reports the volume's stats
// (NodeGetVolumeStats) as kubelet_volume_stats_* metrics.
func TestDefaultStorageClass(t *testing.T) {
	c := framework.Connect(t)
	ctx := t.Context()
	sc, err := c.Client.StorageV1().StorageClasses().Get(ctx, defaultClass, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		testutil.MissingCapability(t, "no default StorageClass: the cluster was brought up with DEFAULT_STORAGECLASS=false")
	}
	if err != nil {
		t.Fatal(err)
	}
	if sc.Annotations["storageclass.kubernetes.io/is-default-class"] != "true" || sc.Provisioner != hostpathDriver ||
		sc.VolumeBindingMode == nil || *sc.VolumeBindingMode != storagev1.VolumeBindingWaitForFirstConsumer {
		t.Fatalf("StorageClass %s: annotations %v, provisioner %s, binding %v; want the default, %s, WaitForFirstConsumer",
			sc.Name, sc.Annotations, sc.Provisioner, sc.VolumeBindingMode, hostpathDriver)
	}
	for i, n := range c.Nodes {
		t.Run(n.Name, func(t *testing.T) {
			checkRegistration(t, n)
			name := fmt.Sprintf("e2e-default-sc-%d", i)
			pv := provisionOn(ctx, t, c, n, name)
			if i == 0 {
				requireVolumeStats(ctx, t, c, n.Name, name)
			}
			c.DeletePod(t, name)
			deleteClaimAndWait(ctx, t, c, name, pv)
			dir := n.HostPath(t, filepath.Join(n.RootDir(), hostpathDataDir, pv.Spec.CSI.VolumeHandle))
			if _, err := os.Stat(dir); !os.IsNotExist(err) {
				t.Errorf("volume directory %s is left after its PV was deleted: %v", dir, err)
			}
		})
	}
}

// checkRegistration: with nodeplug's plugin watcher on, the driver's
// registration socket is in its directory on the node.
func checkRegistration(t *testing.T, n *framework.Node) {
	t.Helper()
	dir := os.Getenv("E2E_PLUGIN_REGISTRATION_DIR")
	if dir == "" {
		t.Log("E2E_PLUGIN_REGISTRATION_DIR is not set: not checking that the driver registered through nodeplug's watcher")
		return
	}
	sock := n.HostPath(t, filepath.Join(dir, hostpathRegSocket))
	if fi, err := os.Stat(sock); err != nil || fi.Mode()&os.ModeSocket == 0 {
		t.Fatalf("no registration socket at %s (%v): the driver did not register through nodeplug's watcher", sock, err)
	}
}

// provisionOn creates a claim without a class and a pod that uses it,
// scheduled to node n, and returns the claim's PV once the pod has written
// to the volume; the PV must be pinned to n and the file be in n's data dir.
func provisionOn(ctx context.Context, t *testing.T, c *framework.Cluster, n *framework.Node, name string) *corev1.PersistentVolume {
	t.Helper()
	pvc := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Mi")}}},
	}
	if _, err := c.Client.CoreV1().PersistentVolumeClaims("default").Create(ctx, pvc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = c.Client.CoreV1().PersistentVolumeClaims("default").Delete(context.Background(), name, metav1.DeleteOptions{})
	})
	greeting := "hello from " + n.Name
	pod := framework.BusyboxPod(name, fmt.Sprintf("echo %q > /data/f && sleep 3600", greeting))
	pod.Spec.NodeSelector = map[string]string{"kubernetes.io/hostname": n.Name}
	pod.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
		PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: name}}}}
	pod.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}
	c.CreatePodOn(ctx, t, pod, "")
	c.WaitForPod(ctx, t, name, 120*time.Second, corev1.PodRunning)
	c.RequireFile(ctx, t, name, "/data/f", greeting)

	got, err := c.Client.CoreV1().PersistentVolumeClaims("default").Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Spec.StorageClassName == nil || *got.Spec.StorageClassName != defaultClass || got.Status.Phase != corev1.ClaimBound {
		t.Fatalf("claim %s: class %v, phase %s; want %s, Bound", name, got.Spec.StorageClassName, got.Status.Phase, defaultClass)
	}
	pv, err := c.Client.CoreV1().PersistentVolumes().Get(ctx, got.Spec.VolumeName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if pv.Spec.CSI == nil || pv.Spec.CSI.Driver != hostpathDriver || pv.Spec.PersistentVolumeReclaimPolicy != corev1.PersistentVolumeReclaimDelete {
		t.Fatalf("PV %s: %+v, reclaim %s; want a %s volume reclaimed by Delete", pv.Name, pv.Spec.CSI, pv.Spec.PersistentVolumeReclaimPolicy, hostpathDriver)
	}
	if pinned := pinnedTo(pv); pinned != n.Name {
		t.Fatalf("PV %s is pinned to %q, want %s (node affinity %v)", pv.Name, pinned, n.Name, pv.Spec.NodeAffinity)
	}
	file := n.HostPath(t, filepath.Join(n.RootDir(), hostpathDataDir, pv.Spec.CSI.VolumeHandle, "f"))
	if b, err := os.ReadFile(file); err != nil || strings.TrimSpace(string(b)) != greeting {
		t.Fatalf("%s on node %s: %q, %v; want %q", file, n.Name, b, err, greeting)
	}
	return pv
}

// pinnedTo returns the node the PV's affinity names with the driver's
// topology key ("" if none, or several).
func pinnedTo(pv *corev1.PersistentVolume) string {
	if pv.Spec.NodeAffinity == nil || pv.Spec.NodeAffinity.Required == nil {
		return ""
	}
	node := ""
	for _, term := range pv.Spec.NodeAffinity.Required.NodeSelectorTerms {
		for _, e := range term.MatchExpressions {
			if e.Key != hostpathTopology || len(e.Values) != 1 || (node != "" && node != e.Values[0]) {
				return ""
			}
			node = e.Values[0]
		}
	}
	return node
}

// requireVolumeStats waits until node's kubelet reports the claim's volume
// stats, which it reads with NodeGetVolumeStats (about once a minute).
func requireVolumeStats(ctx context.Context, t *testing.T, c *framework.Cluster, node, claim string) {
	t.Helper()
	want := fmt.Sprintf(`kubelet_volume_stats_used_bytes{namespace="default",persistentvolumeclaim=%q}`, claim)
	var out string
	err := framework.Poll(t.Context(), 150*time.Second, func(context.Context) bool {
		var err error
		out, err = c.KubeletMetrics(ctx, node)
		return err == nil && strings.Contains(out, want)
	})
	if err != nil {
		t.Fatalf("the kubelet on %s reports no %s after 150 s", node, want)
	}
}

// deleteClaimAndWait deletes the claim, then waits until its PV is gone
// (reclaim policy Delete: the provisioner called DeleteVolume).
func deleteClaimAndWait(ctx context.Context, t *testing.T, c *framework.Cluster, claim string, pv *corev1.PersistentVolume) {
	t.Helper()
	if err := c.Client.CoreV1().PersistentVolumeClaims("default").Delete(ctx, claim, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitForPVGone(t.Context(), pv.Name, 60*time.Second); err != nil {
		t.Fatalf("PV %s still exists 60 s after its claim was deleted", pv.Name)
	}
}
