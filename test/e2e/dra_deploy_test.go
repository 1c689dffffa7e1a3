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

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/kubernetes/test/e2e/dra/test-driver/deploy/example"

	"github.com/nodeplug/nodeplug/test/e2e/framework"
)

// draDriver is what the DRA cases (draCases) need to know of a DRA driver
// deployed as a DaemonSet on every node.
type draDriver struct {
	label     string // for the test's messages and subtests
	name      string // the driver's name, in its ResourceSlices and CDI specs
	namespace string // of its DaemonSet
	daemonSet string
	selector  string // labels of its pods
	template  string // a ResourceClaimTemplate in namespace default for one of its devices
	devices   int    // devices it publishes per node
	command   string // argv[0] of its process
	podPrefix string // of the names of the claim pods the cases create
	// claimEnv is (a part of) the environment variable the driver's CDI
	// spec for claim gives a container.
	claimEnv func(claim *resourceapi.ResourceClaim) string
	// update starts a rolling update of its DaemonSet (maxSurge 1) the
	// way its users would.
	update func(ctx context.Context, t *testing.T, c *framework.Cluster)
}

// draTestImage is upstream's DRA test driver's image, as
// build/dra-test-driver builds it.
var draTestImage = framework.Image("dra-test-driver:v1.37.2")

// Upstream's DRA test driver as build/dra-test-driver runs it, and the
// objects the DRA tests create for it.
const (
	draTestName      = "test-driver.cdi.k8s.io"
	draTestNamespace = "nodeplug-dra-namespace" // upstream's RBAC names, with its placeholder replaced
	draTestAccount   = "nodeplug-dra-service-account"
	draTestDaemonSet = "dra-test-driver"
	draTestClass     = "nodeplug-dra-e2e"
	draTestRequest   = "dev"
	// draTestEnv is the variable the driver's CDI spec sets from the
	// claim's opaque parameter {"nodeplug": "dra-e2e"} (upstream prefixes
	// "user_").
	draTestEnv = "user_nodeplug=dra-e2e"
)

// draTestDriver describes upstream's DRA test driver: four devices per
// node; a rolling update is a change of the DaemonSet's pod template.
func draTestDriver() *draDriver {
	d := &draDriver{
		label: "dra-test-driver", name: draTestName, namespace: draTestNamespace, daemonSet: draTestDaemonSet,
		selector: "app=" + draTestDaemonSet, template: "nodeplug-dra-e2e", devices: 4,
		command: "/dra-test-driver", podPrefix: "e2e-dra-",
		claimEnv: func(*resourceapi.ResourceClaim) string { return draTestEnv },
	}
	d.update = func(ctx context.Context, t *testing.T, c *framework.Cluster) {
		patch := `{"spec":{"template":{"metadata":{"annotations":{"e2e.nodeplug.io/revision":"2"}}}}}`
		if _, err := c.Client.AppsV1().DaemonSets(d.namespace).Patch(ctx, d.daemonSet, types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	return d
}

// draDeploy creates upstream's RBAC for the driver (PluginPermissions of
// k8s.io/kubernetes/test/e2e/dra/test-driver/deploy/example, with its
// placeholders replaced), a DeviceClass of the driver, a claim template in
// the default namespace, and the driver's DaemonSet on every node, and
// waits for a ready instance on each. Everything is deleted when t ends.
func draDeploy(ctx context.Context, t *testing.T, c *framework.Cluster, d *draDriver, regDir string) {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: draTestNamespace}}
	if _, err := c.Client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("create namespace %s: %v", draTestNamespace, err)
	}
	t.Cleanup(func() {
		_ = c.Client.CoreV1().Namespaces().Delete(context.Background(), draTestNamespace, metav1.DeleteOptions{})
	})
	perms := strings.ReplaceAll(example.PluginPermissions, "dra-kubelet-plugin-driver-name", draTestName)
	perms = strings.ReplaceAll(perms, "dra-kubelet-plugin", "nodeplug-dra")
	file := filepath.Join(t.TempDir(), "plugin-permissions.yaml")
	if err := os.WriteFile(file, []byte(perms), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := c.Kubectl(ctx, "apply", "-f", file); err != nil {
		t.Fatalf("apply upstream's plugin-permissions.yaml: %v\n%s", err, out)
	}
	t.Cleanup(func() {
		_, _ = c.Kubectl(context.Background(), "delete", "--ignore-not-found", "--wait=false", "-f", file)
	})

	res := c.Client.ResourceV1()
	class := &resourceapi.DeviceClass{
		ObjectMeta: metav1.ObjectMeta{Name: draTestClass},
		Spec: resourceapi.DeviceClassSpec{Selectors: []resourceapi.DeviceSelector{{
			CEL: &resourceapi.CELDeviceSelector{Expression: fmt.Sprintf("device.driver == %q", draTestName)},
		}}},
	}
	if _, err := res.DeviceClasses().Create(ctx, class, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create DeviceClass %s: %v (does the API server serve resource.k8s.io/v1?)", draTestClass, err)
	}
	t.Cleanup(func() { _ = res.DeviceClasses().Delete(context.Background(), draTestClass, metav1.DeleteOptions{}) })
	draCreateTemplate(ctx, t, c, d, draTestClass, &resourceapi.OpaqueDeviceConfiguration{Driver: draTestName,
		Parameters: runtime.RawExtension{Raw: []byte(`{"nodeplug":"dra-e2e"}`)}})

	apps := c.Client.AppsV1().DaemonSets(d.namespace)
	if _, err := apps.Create(ctx, draDaemonSetSpec(regDir), metav1.CreateOptions{}); err != nil {
		t.Fatalf("create DaemonSet %s: %v", d.daemonSet, err)
	}
	t.Cleanup(func() {
		_ = apps.Delete(context.Background(), d.daemonSet, metav1.DeleteOptions{})
		draUndeploy(t, c, d)
	})
	draAwaitRollout(ctx, t, c, d, len(c.Nodes), nil)
}

// draCreateTemplate creates d.template in namespace default: one device of
// class, with config if it is not nil. It is deleted when t ends.
func draCreateTemplate(ctx context.Context, t *testing.T, c *framework.Cluster, d *draDriver, class string, config *resourceapi.OpaqueDeviceConfiguration) {
	t.Helper()
	spec := resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{
		Requests: []resourceapi.DeviceRequest{{Name: draTestRequest, Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: class}}},
	}}
	if config != nil {
		spec.Devices.Config = []resourceapi.DeviceClaimConfiguration{{DeviceConfiguration: resourceapi.DeviceConfiguration{Opaque: config}}}
	}
	tmpl := &resourceapi.ResourceClaimTemplate{
		ObjectMeta: metav1.ObjectMeta{Name: d.template, Namespace: "default"},
		Spec:       resourceapi.ResourceClaimTemplateSpec{Spec: spec},
	}
	templates := c.Client.ResourceV1().ResourceClaimTemplates("default")
	if _, err := templates.Create(ctx, tmpl, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create ResourceClaimTemplate %s: %v", d.template, err)
	}
	t.Cleanup(func() { _ = templates.Delete(context.Background(), d.template, metav1.DeleteOptions{}) })
}

// draUndeploy deletes the driver's instances left (orphaned ones included)
// and waits until they are gone.
func draUndeploy(t *testing.T, c *framework.Cluster, d *draDriver) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	pods := c.Client.CoreV1().Pods(d.namespace)
	_ = pods.DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: d.selector})
	// t's own context is cancelled by now.
	if err := framework.Poll(ctx, 0, func(ctx context.Context) bool {
		l, err := pods.List(ctx, metav1.ListOptions{LabelSelector: d.selector})
		return err == nil && len(l.Items) == 0
	}); err != nil {
		t.Errorf("the driver's pods are still there 60 s after their deletion: %v", err)
	}
}

// draDaemonSetSpec is the driver on every node, updated with maxSurge 1:
// only the registration directory's hostPath is nodeplug's (at the same
// path in the container, so the helper picks the socket name the kubelet
// can reach); the data and CDI directories are upstream's defaults.
func draDaemonSetSpec(regDir string) *appsv1.DaemonSet {
	labels := map[string]string{"app": draTestDaemonSet}
	surge, zero := intstr.FromInt32(1), intstr.FromInt32(0)
	grace := int64(10)
	dirOrCreate := corev1.HostPathDirectoryOrCreate
	hostPath := func(name, path string) (corev1.Volume, corev1.VolumeMount) {
		return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: path, Type: &dirOrCreate}}},
			corev1.VolumeMount{Name: name, MountPath: path}
	}
	var vols []corev1.Volume
	var mounts []corev1.VolumeMount
	for name, path := range map[string]string{"registry": regDir, "plugins": "/var/lib/kubelet/plugins", "cdi": "/var/run/cdi"} {
		v, m := hostPath(name, path)
		vols, mounts = append(vols, v), append(mounts, m)
	}
	fieldEnv := func(name, path string) corev1.EnvVar {
		return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: path}}}
	}
	return &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: draTestDaemonSet, Namespace: draTestNamespace},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			UpdateStrategy: appsv1.DaemonSetUpdateStrategy{Type: appsv1.RollingUpdateDaemonSetStrategyType,
				RollingUpdate: &appsv1.RollingUpdateDaemonSet{MaxSurge: &surge, MaxUnavailable: &zero}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels, Annotations: map[string]string{"e2e.nodeplug.io/revision": "1"}},
				Spec: corev1.PodSpec{
					ServiceAccountName:            draTestAccount,
					TerminationGracePeriodSeconds: &grace,
					Volumes:                       vols,
					Containers: []corev1.Container{{
						Name: "plugin", Image: draTestImage, ImagePullPolicy: framework.ImagePullPolicy(),
						Args: []string{"--node-name=$(NODE_NAME)", "--pod-uid=$(POD_UID)",
							"--plugin-registration-path=" + regDir, "--cdi-dir=/var/run/cdi", "-v=3"},
						Env:          []corev1.EnvVar{fieldEnv("NODE_NAME", "spec.nodeName"), fieldEnv("POD_UID", "metadata.uid")},
						VolumeMounts: mounts,
					}},
				},
			},
		},
	}
}

// draAwaitRollout waits until the DaemonSet has an updated, ready instance
// on each of want nodes and none of the pods in old is left, and returns
// the instance on each node.
func draAwaitRollout(ctx context.Context, t *testing.T, c *framework.Cluster, d *draDriver, want int, old map[string]*corev1.Pod) map[string]*corev1.Pod {
	t.Helper()
	var last string
	var byNode map[string]*corev1.Pod
	err := framework.Poll(t.Context(), 120*time.Second, func(context.Context) bool {
		ds, err := c.Client.AppsV1().DaemonSets(d.namespace).Get(ctx, d.daemonSet, metav1.GetOptions{})
		if err != nil {
			last = err.Error()
			return false
		}
		s := ds.Status
		last = fmt.Sprintf("desired %d, updated %d, ready %d, available %d", s.DesiredNumberScheduled, s.UpdatedNumberScheduled, s.NumberReady, s.NumberAvailable)
		if s.ObservedGeneration < ds.Generation || int(s.DesiredNumberScheduled) != want || s.UpdatedNumberScheduled != s.DesiredNumberScheduled || s.NumberReady != s.DesiredNumberScheduled {
			return false
		}
		l, err := c.Client.CoreV1().Pods(d.namespace).List(ctx, metav1.ListOptions{LabelSelector: d.selector})
		if err != nil {
			return false
		}
		if len(l.Items) != want {
			last += fmt.Sprintf("; %d instances, want one per node", len(l.Items))
			return false
		}
		for _, p := range l.Items {
			if prev, ok := old[p.Spec.NodeName]; ok && prev.UID == p.UID {
				last += "; the old instance " + p.Name + " is still there"
				return false
			}
		}
		byNode = draInstances(ctx, t, c, d)
		return len(byNode) == want
	})
	if err != nil {
		t.Fatalf("the DaemonSet %s did not roll out in 120 s: %s", d.daemonSet, last)
	}
	return byNode
}

// draInstances returns the driver's running pod on each node; it fails t
// if a node runs more than one.
func draInstances(ctx context.Context, t *testing.T, c *framework.Cluster, d *draDriver) map[string]*corev1.Pod {
	t.Helper()
	l, err := c.Client.CoreV1().Pods(d.namespace).List(ctx, metav1.ListOptions{LabelSelector: d.selector})
	if err != nil {
		t.Fatal(err)
	}
	byNode := map[string]*corev1.Pod{}
	for i := range l.Items {
		p := &l.Items[i]
		if p.DeletionTimestamp != nil || p.Status.Phase != corev1.PodRunning {
			continue
		}
		if other, ok := byNode[p.Spec.NodeName]; ok {
			t.Logf("node %s runs two instances, %s and %s (a rolling update's surge)", p.Spec.NodeName, other.Name, p.Name)
		}
		byNode[p.Spec.NodeName] = p
	}
	return byNode
}

// draSlices returns how many of the driver's devices each node's
// ResourceSlices publish.
func draSlices(ctx context.Context, c *framework.Cluster, d *draDriver) (map[string]int, error) {
	l, err := c.Client.ResourceV1().ResourceSlices().List(ctx, metav1.ListOptions{FieldSelector: "spec.driver=" + d.name})
	if err != nil {
		return nil, err
	}
	devices := map[string]int{}
	for _, s := range l.Items {
		if s.Spec.NodeName != nil {
			devices[*s.Spec.NodeName] += len(s.Spec.Devices)
		}
	}
	return devices, nil
}
