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
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/nodeplug/nodeplug/test/e2e/framework"
)

const (
	muNamespace = "kube-mount"
	muDaemonSet = "mount-utilities"
)

// muDeploy applies deploy/mount-utilities (namespace, admission policy and
// DaemonSet, with the local cluster's kubelet root dir) and waits until its
// pod is Ready. It returns the pod's name. The policy stays after the test,
// as the namespace does: the mount pod tests all run under it.
func muDeploy(ctx context.Context, t testing.TB, c *framework.Cluster) string {
	t.Helper()
	var ns corev1.Namespace
	muManifest(t, "namespace.yaml", "", &ns)
	if _, err := c.Client.CoreV1().Namespaces().Create(ctx, &ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("create namespace: %v", err)
	}
	muApplyAdmissionPolicy(ctx, t, c)
	var ds appsv1.DaemonSet
	muManifest(t, "daemonset.yaml", c.Node.RootDir(), &ds)
	if _, err := c.Client.AppsV1().DaemonSets(muNamespace).Create(ctx, &ds, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("create daemonset: %v", err)
	}
	return muWaitReady(ctx, t, c)
}

// muManifest reads deploy/mount-utilities/<file>, with /var/lib/kubelet
// replaced by root when root is set.
func muManifest(t testing.TB, file, root string, into any) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "..", "deploy", "mount-utilities", file))
	if err != nil {
		t.Fatal(err)
	}
	doc := string(framework.ManifestImages(raw))
	if root != "" {
		doc = strings.ReplaceAll(doc, "/var/lib/kubelet", root)
	}
	if err := yaml.UnmarshalStrict([]byte(doc), into); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
}

// muWaitReady waits for a Ready, not deleting mount-utilities pod on the
// first node.
func muWaitReady(ctx context.Context, t testing.TB, c *framework.Cluster) string {
	t.Helper()
	return muWaitReadyOn(ctx, t, c, c.NodeName)
}

// muWaitReadyOn waits for a Ready, not deleting mount-utilities pod on node.
func muWaitReadyOn(ctx context.Context, t testing.TB, c *framework.Cluster, node string) string {
	t.Helper()
	var name string
	err := framework.Poll(ctx, 120*time.Second, func(ctx context.Context) bool {
		pods, err := c.Client.CoreV1().Pods(muNamespace).List(ctx, metav1.ListOptions{
			LabelSelector: "app=" + muDaemonSet, FieldSelector: "spec.nodeName=" + node})
		if err != nil {
			return false
		}
		for _, p := range pods.Items {
			if p.DeletionTimestamp == nil && framework.PodReady(&p) {
				name = p.Name
				return true
			}
		}
		return false
	}, framework.PollEvery(200*time.Millisecond))
	if err != nil {
		out, _ := c.Kubectl(ctx, "-n", muNamespace, "describe", "pods")
		t.Fatalf("no Ready mount-utilities pod on %s: %v\n%s", node, err, out)
	}
	return name
}

// muRemove deletes the DaemonSet and waits until its pods are gone.
func muRemove(t testing.TB, c *framework.Cluster) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	fg := metav1.DeletePropagationForeground
	err := c.Client.AppsV1().DaemonSets(muNamespace).Delete(ctx, muDaemonSet, metav1.DeleteOptions{PropagationPolicy: &fg})
	if err != nil && !apierrors.IsNotFound(err) {
		t.Errorf("delete daemonset: %v", err)
	}
	err = framework.Poll(ctx, 0, func(ctx context.Context) bool {
		pods, err := c.Client.CoreV1().Pods(muNamespace).List(ctx, metav1.ListOptions{LabelSelector: "app=" + muDaemonSet})
		return err == nil && len(pods.Items) == 0
	}, framework.PollEvery(200*time.Millisecond))
	if err != nil {
		t.Errorf("mount-utilities pods still exist: %v", err)
	}
}

// muLoop returns a new blank 64 MiB loop device, detached when t ends.
func muLoop(t testing.TB, c *framework.Cluster, name string) string {
	t.Helper()
	img := filepath.Join(c.Dir(t), "shared", "mu-"+name+".img")
	if err := os.WriteFile(img, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(img, 64<<20); err != nil {
		t.Fatal(err)
	}
	dev := framework.AttachLoop(t, img)
	t.Cleanup(func() {
		_ = exec.Command("losetup", "-d", dev).Run()
		_ = os.Remove(img)
	})
	return dev
}

// muLocalClaim creates a local PV on dev with fsType ext4 pinned to the
// node, and a claim bound to it; both are deleted when t ends.
func muLocalClaim(ctx context.Context, t testing.TB, c *framework.Cluster, name, dev string) {
	t.Helper()
	fs := "ext4"
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("64Mi")},
			AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
			StorageClassName:              "mu-e2e",
			PersistentVolumeSource:        corev1.PersistentVolumeSource{Local: &corev1.LocalVolumeSource{Path: dev, FSType: &fs}},
			NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
				MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "kubernetes.io/hostname", Operator: corev1.NodeSelectorOpIn, Values: []string{c.NodeName}}},
			}}}},
		},
	}
	class := "mu-e2e"
	pvc := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}, StorageClassName: &class, VolumeName: name,
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("64Mi")}},
		},
	}
	if _, err := c.Client.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create pv: %v", err)
	}
	t.Cleanup(func() {
		_ = c.Client.CoreV1().PersistentVolumes().Delete(context.Background(), name, metav1.DeleteOptions{})
	})
	if _, err := c.Client.CoreV1().PersistentVolumeClaims("default").Create(ctx, pvc, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create pvc: %v", err)
	}
	t.Cleanup(func() {
		_ = c.Client.CoreV1().PersistentVolumeClaims("default").Delete(context.Background(), name, metav1.DeleteOptions{})
	})
}

// muConsumer returns a pod that writes to /data and keeps running.
func muConsumer(name string, vol corev1.VolumeSource) *corev1.Pod {
	pod := framework.BusyboxPod(name, "echo written-by-"+name+" > /data/f && sync && sleep 3600")
	pod.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "v", MountPath: "/data"}}
	pod.Spec.Volumes = []corev1.Volume{{Name: "v", VolumeSource: vol}}
	return pod
}

// muKubeletMetric returns the sum of the first node's kubelet's samples of
// metric whose label set contains every one of labels (as `key="value"`).
func muKubeletMetric(ctx context.Context, t testing.TB, c *framework.Cluster, metric string, labels ...string) float64 {
	t.Helper()
	return muKubeletMetricOn(ctx, t, c, c.NodeName, metric, labels...)
}

// muKubeletMetricOn is muKubeletMetric for node's kubelet.
func muKubeletMetricOn(ctx context.Context, t testing.TB, c *framework.Cluster, node, metric string, labels ...string) float64 {
	t.Helper()
	text, err := c.KubeletMetrics(ctx, node)
	if err != nil {
		t.Fatal(err)
	}
	return framework.MetricSum(text, metric, labels...)
}

// muRestartKubelet stops the kubelet local-up started and starts it again
// with the same command line and environment.
func muRestartKubelet(ctx context.Context, t testing.TB, c *framework.Cluster) {
	t.Helper()
	restartComponent(ctx, t, c, "kubelet", nil)
}

// muKubeletLogSinceRestart returns the kubelet log written by the newest
// kubelet process (after the last start-up banner).
func muKubeletLogSinceRestart(t testing.TB, c *framework.Cluster) string {
	raw, err := os.ReadFile(c.Node.Log(t, "kubelet"))
	if err != nil {
		t.Fatal(err)
	}
	log := string(raw)
	if i := strings.LastIndex(log, "Nodeplug mount utilities in pods enabled"); i >= 0 {
		return log[i:]
	}
	return log
}

func procList(t testing.TB, pid, file string) []string {
	raw, err := os.ReadFile(filepath.Join("/proc", pid, file))
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimRight(string(raw), "\x00"), "\x00")
}
