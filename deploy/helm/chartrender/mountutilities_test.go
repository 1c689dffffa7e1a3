package chartrender

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"helm.sh/helm/v3/pkg/lint"
	"helm.sh/helm/v3/pkg/lint/support"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

const (
	muKustomizeDir  = "../../mount-utilities"
	muNamespace     = "kube-mount"
	muRelease       = "mount-utilities"
	defaultKubelet  = "/var/lib/kubelet"
	microk8sKubelet = "/var/snap/microk8s/common/var/lib/kubelet"
)

func renderMountUtilities(t *testing.T, namespace string, values map[string]any) []*unstructured.Unstructured {
	t.Helper()
	objs, err := Render(Options{ChartDir: MountUtilitiesChartDir("."), Release: muRelease, Namespace: namespace, Values: values})
	if err != nil {
		t.Fatalf("render: %v", err)
	}
	return objs
}

// kustomizeMountUtilities returns the objects kubectl kustomize makes of
// deploy/mount-utilities: its kustomization only lists resources, so they
// are the documents of the files it lists, in order. Any other field in
// the kustomization (a transformer) fails the test, which would then have
// to run kustomize itself. (kubectl kustomize also re-encodes the policy's
// folded CEL expressions, adding a blank line before each more-indented
// line: whitespace only, which this reading leaves out.)
func kustomizeMountUtilities(t *testing.T) []*unstructured.Unstructured {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(muKustomizeDir, "kustomization.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var k map[string]any
	if err := yaml.Unmarshal(raw, &k); err != nil {
		t.Fatalf("kustomization.yaml: %v", err)
	}
	for key := range k {
		if key != "apiVersion" && key != "kind" && key != "resources" {
			t.Fatalf("kustomization.yaml has %q: this test reads the resources as they are, which kustomize would change", key)
		}
	}
	var objs []*unstructured.Unstructured
	for _, r := range k["resources"].([]any) {
		raw, err := os.ReadFile(filepath.Join(muKustomizeDir, r.(string)))
		if err != nil {
			t.Fatal(err)
		}
		docs, err := decode(string(raw))
		if err != nil {
			t.Fatalf("%s: %v", r, err)
		}
		objs = append(objs, docs...)
	}
	return objs
}

func objectKey(o *unstructured.Unstructured) string {
	return o.GetKind() + " " + o.GetNamespace() + "/" + o.GetName()
}

func byKey(objs []*unstructured.Unstructured) map[string]map[string]any {
	out := map[string]map[string]any{}
	for _, o := range objs {
		out[objectKey(o)] = o.Object
	}
	return out
}

// TestMountUtilitiesDefaultsMatchKustomize: with its defaults, released
// in kube-mount, the chart makes the objects of deploy/mount-utilities,
// field for field, but the Namespace: Helm installs into an existing
// namespace (helm install --create-namespace, or the operator's), so the
// chart does not own it and checks its Pod Security level instead
// (TestMountUtilitiesNamespacePodSecurity).
func TestMountUtilitiesDefaultsMatchKustomize(t *testing.T) {
	want := byKey(kustomizeMountUtilities(t))
	got := byKey(renderMountUtilities(t, muNamespace, nil))
	ns := "Namespace /" + muNamespace
	if _, ok := want[ns]; !ok {
		t.Fatalf("deploy/mount-utilities has no %s; have %v", ns, cmp.Diff(nil, want))
	}
	delete(want, ns)
	for key, w := range want {
		t.Run(key, func(t *testing.T) {
			g, ok := got[key]
			if !ok {
				t.Fatalf("the chart has no %s", key)
			}
			if diff := cmp.Diff(w, g); diff != "" {
				t.Errorf("%s differs from the kustomize manifest (-kustomize +chart):\n%s", key, diff)
			}
		})
	}
	for key := range got {
		if _, ok := want[key]; !ok {
			t.Errorf("the chart renders %s, which deploy/mount-utilities does not have", key)
		}
	}
}

func mountUtilitiesDaemonSet(t *testing.T, objs []*unstructured.Unstructured) *appsv1.DaemonSet {
	t.Helper()
	for _, o := range objs {
		if o.GetKind() == "DaemonSet" && o.GetName() == "mount-utilities" {
			ds := &appsv1.DaemonSet{}
			mustConvert(t, o.Object, ds)
			return ds
		}
	}
	t.Fatal("no DaemonSet mount-utilities in the chart")
	return nil
}

// podPaths points at every host and container path of a pod spec.
func podPaths(spec *corev1.PodSpec) []*string {
	var out []*string
	for i := range spec.Volumes {
		if hp := spec.Volumes[i].HostPath; hp != nil {
			out = append(out, &hp.Path)
		}
	}
	for i := range spec.Containers {
		for j := range spec.Containers[i].VolumeMounts {
			out = append(out, &spec.Containers[i].VolumeMounts[j].MountPath)
		}
	}
	return out
}

func underDir(path, dir string) bool {
	return path == dir || strings.HasPrefix(path, dir+"/")
}

// TestMountUtilitiesKubeletDir: kubeletDir moves every host and container
// path that is the kubelet's root directory (or below it) to the new
// directory, and changes nothing else in the DaemonSet.
func TestMountUtilitiesKubeletDir(t *testing.T) {
	tests := []struct {
		name, dir string
	}{
		{name: "microk8s", dir: microk8sKubelet},
		{name: "k0s", dir: "/var/lib/k0s/kubelet"},
		{name: "default", dir: defaultKubelet},
	}
	base := mountUtilitiesDaemonSet(t, renderMountUtilities(t, muNamespace, nil))
	var kubeletPaths int
	for _, p := range podPaths(&base.Spec.Template.Spec) {
		if underDir(*p, defaultKubelet) {
			kubeletPaths++
		}
	}
	if kubeletPaths != 2 {
		t.Fatalf("the default DaemonSet has %d kubelet paths, want 2 (the hostPath and its mountPath)", kubeletPaths)
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := mountUtilitiesDaemonSet(t, renderMountUtilities(t, muNamespace, map[string]any{"kubeletDir": tc.dir}))
			want := base.DeepCopy()
			for _, p := range podPaths(&want.Spec.Template.Spec) {
				if underDir(*p, defaultKubelet) {
					*p = tc.dir + strings.TrimPrefix(*p, defaultKubelet)
				}
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("kubeletDir %s: the DaemonSet differs from the default one with only its kubelet paths moved (-want +got):\n%s", tc.dir, diff)
			}
			// The e2e tests run deploy/mount-utilities/daemonset.yaml with
			// every /var/lib/kubelet replaced by the node's kubelet
			// directory (muManifest): the chart makes that DaemonSet.
			raw, err := os.ReadFile(filepath.Join(muKustomizeDir, "daemonset.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			docs, err := decode(strings.ReplaceAll(string(raw), defaultKubelet, tc.dir))
			if err != nil || len(docs) != 1 {
				t.Fatalf("daemonset.yaml with %s: %d objects, %v", tc.dir, len(docs), err)
			}
			replaced := &appsv1.DaemonSet{}
			mustConvert(t, docs[0].Object, replaced)
			if diff := cmp.Diff(replaced, got); diff != "" {
				t.Errorf("kubeletDir %s: the DaemonSet differs from daemonset.yaml with /var/lib/kubelet replaced (-manifest +chart):\n%s", tc.dir, diff)
			}
		})
	}
}

// TestMountUtilitiesRefusals: values the DaemonSet cannot run with fail
// the rendering with a message naming the key.
func TestMountUtilitiesRefusals(t *testing.T) {
	tests := []struct {
		name    string
		values  map[string]any
		wantErr string
	}{
		{name: "relative kubeletDir", values: map[string]any{"kubeletDir": "var/lib/kubelet"},
			wantErr: `values: kubeletDir "var/lib/kubelet" must be the absolute path of the kubelet's root directory`},
		{name: "empty kubeletDir", values: map[string]any{"kubeletDir": ""},
			wantErr: `values: kubeletDir "" must be the absolute path`},
		{name: "kubeletDir with a trailing slash", values: map[string]any{"kubeletDir": "/var/lib/kubelet/"},
			wantErr: `values: kubeletDir "/var/lib/kubelet/" is not a clean path, and the mount must be at the path the kubelet uses: write it as /var/lib/kubelet`},
		{name: "kubeletDir with ..", values: map[string]any{"kubeletDir": "/var/lib/../lib/kubelet"},
			wantErr: `write it as /var/lib/kubelet`},
		{name: "kubeletDir /", values: map[string]any{"kubeletDir": "/"},
			wantErr: `values: kubeletDir "/": the pods would mount the host's whole file system`},
		{name: "empty image", values: map[string]any{"image": ""},
			wantErr: "values: image is empty: name the mount-utilities image"},
		{name: "blank image", values: map[string]any{"image": "  "},
			wantErr: "values: image is empty"},
		{name: "unknown pull policy", values: map[string]any{"imagePullPolicy": "Sometimes"},
			wantErr: `values: imagePullPolicy "Sometimes" must be Always, IfNotPresent or Never`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Render(Options{ChartDir: MountUtilitiesChartDir("."), Release: muRelease, Namespace: muNamespace, Values: tc.values})
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("error %v; want one saying %q", err, tc.wantErr)
			}
		})
	}
}

// TestMountUtilitiesValues: the node settings reach the DaemonSet, and the
// mount labels, the update strategy and the privileged container do not
// move with them.
func TestMountUtilitiesValues(t *testing.T) {
	upgradeTaint := corev1.Toleration{Key: "nodeplug.io/mount-utilities-upgrade", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute}
	gpu := corev1.Toleration{Key: "gpu", Operator: corev1.TolerationOpEqual, Value: "true", Effect: corev1.TaintEffectNoSchedule}
	tests := []struct {
		name   string
		values map[string]any
		check  func(t *testing.T, ds *appsv1.DaemonSet)
	}{
		{name: "image and pull policy", values: map[string]any{"image": "registry.example/mu:2", "imagePullPolicy": "Always"},
			check: func(t *testing.T, ds *appsv1.DaemonSet) {
				c := ds.Spec.Template.Spec.Containers[0]
				if c.Image != "registry.example/mu:2" || c.ImagePullPolicy != corev1.PullAlways {
					t.Errorf("image %s (%s), want registry.example/mu:2 (Always)", c.Image, c.ImagePullPolicy)
				}
			}},
		{name: "node selector, priority class, pull secrets", values: map[string]any{
			"nodeSelector": map[string]any{"storage": "yes"}, "priorityClassName": "",
			"imagePullSecrets": []any{map[string]any{"name": "regcred"}}},
			check: func(t *testing.T, ds *appsv1.DaemonSet) {
				s := ds.Spec.Template.Spec
				if s.NodeSelector["storage"] != "yes" || s.PriorityClassName != "" || len(s.ImagePullSecrets) != 1 || s.ImagePullSecrets[0].Name != "regcred" {
					t.Errorf("nodeSelector %v, priorityClassName %q, imagePullSecrets %v", s.NodeSelector, s.PriorityClassName, s.ImagePullSecrets)
				}
			}},
		{name: "resources", values: map[string]any{"resources": map[string]any{"requests": map[string]any{"cpu": "100m"}, "limits": map[string]any{"memory": "1Gi"}}},
			check: func(t *testing.T, ds *appsv1.DaemonSet) {
				r := ds.Spec.Template.Spec.Containers[0].Resources
				if r.Requests.Cpu().String() != "100m" || r.Limits.Memory().String() != "1Gi" {
					t.Errorf("resources %v", r)
				}
			}},
		{name: "own tolerations get the upgrade taint's", values: map[string]any{"tolerations": []any{
			map[string]any{"key": "gpu", "operator": "Equal", "value": "true", "effect": "NoSchedule"}}},
			check: func(t *testing.T, ds *appsv1.DaemonSet) {
				if diff := cmp.Diff([]corev1.Toleration{gpu, upgradeTaint}, ds.Spec.Template.Spec.Tolerations); diff != "" {
					t.Errorf("tolerations (-want +got):\n%s", diff)
				}
			}},
		{name: "no tolerations get the upgrade taint's", values: map[string]any{"tolerations": []any{}},
			check: func(t *testing.T, ds *appsv1.DaemonSet) {
				if diff := cmp.Diff([]corev1.Toleration{upgradeTaint}, ds.Spec.Template.Spec.Tolerations); diff != "" {
					t.Errorf("tolerations (-want +got):\n%s", diff)
				}
			}},
	}
	base := mountUtilitiesDaemonSet(t, renderMountUtilities(t, muNamespace, nil))
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ds := mountUtilitiesDaemonSet(t, renderMountUtilities(t, muNamespace, tc.values))
			tc.check(t, ds)
			if diff := cmp.Diff(base.Spec.Template.Labels, ds.Spec.Template.Labels); diff != "" {
				t.Errorf("the mount labels moved (-default +got):\n%s", diff)
			}
			if ds.Spec.UpdateStrategy.Type != appsv1.OnDeleteDaemonSetStrategyType {
				t.Errorf("updateStrategy %s, want OnDelete", ds.Spec.UpdateStrategy.Type)
			}
			if sc := ds.Spec.Template.Spec.Containers[0].SecurityContext; sc == nil || sc.Privileged == nil || !*sc.Privileged {
				t.Errorf("the utilities container is not privileged: %v", sc)
			}
		})
	}
}

// TestMountUtilitiesNamespace: released in another namespace, every
// namespaced object is there and the admission policy guards that
// namespace; installAdmissionPolicy false leaves the policy out.
func TestMountUtilitiesNamespace(t *testing.T) {
	tests := []struct {
		name       string
		values     map[string]any
		wantPolicy bool
	}{
		{name: "with the policy", wantPolicy: true},
		{name: "without the policy", values: map[string]any{"installAdmissionPolicy": false}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			objs := renderMountUtilities(t, "mount-system", tc.values)
			var policies int
			for _, o := range objs {
				switch o.GetKind() {
				case "DaemonSet", "Role", "RoleBinding":
					if o.GetNamespace() != "mount-system" {
						t.Errorf("%s in namespace %q, want mount-system", objectKey(o), o.GetNamespace())
					}
				case "ValidatingAdmissionPolicy":
					policies++
					sel := field(o.Object, []string{"spec", "matchConstraints", "namespaceSelector", "matchLabels"})
					if diff := cmp.Diff(map[string]any{"kubernetes.io/metadata.name": "mount-system"}, sel); diff != "" {
						t.Errorf("the policy's namespaceSelector (-want +got):\n%s", diff)
					}
				case "ValidatingAdmissionPolicyBinding":
					policies++
				default:
					t.Errorf("unexpected %s", objectKey(o))
				}
			}
			if got := policies == 2; got != tc.wantPolicy || (!tc.wantPolicy && policies != 0) {
				t.Errorf("%d policy objects, want the policy and its binding: %v", policies, tc.wantPolicy)
			}
		})
	}
}

// TestMountUtilitiesNamespacePodSecurity: an install into a namespace
// whose Pod Security level refuses privileged pods fails and names the fix.
func TestMountUtilitiesNamespacePodSecurity(t *testing.T) {
	tests := []struct {
		name    string
		labels  map[string]string
		values  map[string]any
		wantErr string
	}{
		{name: "privileged", labels: map[string]string{"pod-security.kubernetes.io/enforce": "privileged"}},
		{name: "no label", labels: nil},
		{name: "baseline", labels: map[string]string{"pod-security.kubernetes.io/enforce": "baseline"},
			wantErr: `namespace kube-mount: Pod Security enforces "baseline"`},
		{name: "restricted, check off", labels: map[string]string{"pod-security.kubernetes.io/enforce": "restricted"},
			values: map[string]any{"checkNamespacePodSecurity": false}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: muNamespace, Labels: tc.labels}}
			ns.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Namespace"))
			_, err := Render(Options{ChartDir: MountUtilitiesChartDir("."), Release: muRelease, Namespace: muNamespace,
				Values: tc.values, Cluster: newFakeCluster(t, ns)})
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("render: %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("error %v; want %q", err, tc.wantErr)
			case tc.wantErr != "" && !strings.Contains(err.Error(), "kubectl label namespace kube-mount pod-security.kubernetes.io/enforce=privileged"):
				t.Errorf("error %v does not name the fix", err)
			}
		})
	}
}

// TestMountUtilitiesHelmLint runs helm lint's checks on the chart with its
// defaults and with a microk8s kubelet.
func TestMountUtilitiesHelmLint(t *testing.T) {
	tests := []struct {
		name   string
		values map[string]any
	}{
		{name: "defaults"},
		{name: "microk8s", values: map[string]any{"kubeletDir": microk8sKubelet, "tolerations": []any{}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			linter := lint.All(MountUtilitiesChartDir("."), tc.values, muNamespace, false)
			for _, m := range linter.Messages {
				if m.Severity >= support.WarningSev {
					t.Errorf("helm lint: %v", m)
				} else {
					t.Logf("helm lint: %v", m)
				}
			}
		})
	}
}
