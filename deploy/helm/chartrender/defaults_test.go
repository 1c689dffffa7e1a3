package chartrender

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"

	"github.com/nodeplug/nodeplug/pkg/localpv/config"
)

// TestDefaultsMatchKustomize renders the chart with its defaults under the
// names the kustomize manifests use and checks that it makes the same
// objects as deploy/local-volume-provisioner.
func TestDefaultsMatchKustomize(t *testing.T) {
	r := render(t, testRelease, testNS, nil)
	tests := []struct {
		name, kind, object string
		field              []string
	}{
		{name: "CRD", kind: "CustomResourceDefinition", object: "nodediskstates.localpv.nodeplug.io", field: []string{"spec"}},
		{name: "admission policy", kind: "ValidatingAdmissionPolicy", object: "local-volume-provisioner-watcher-own-node", field: []string{"spec"}},
		{name: "admission policy binding", kind: "ValidatingAdmissionPolicyBinding", object: "local-volume-provisioner-watcher-own-node", field: []string{"spec"}},
		{name: "master ClusterRole", kind: "ClusterRole", object: "local-volume-provisioner-master", field: []string{"rules"}},
		{name: "master Role", kind: "Role", object: "local-volume-provisioner-master", field: []string{"rules"}},
		{name: "master ClusterRoleBinding", kind: "ClusterRoleBinding", object: "local-volume-provisioner-master", field: []string{"subjects"}},
		{name: "master RoleBinding", kind: "RoleBinding", object: "local-volume-provisioner-master", field: []string{"subjects"}},
		{name: "watcher ClusterRole", kind: "ClusterRole", object: "local-volume-provisioner-watcher", field: []string{"rules"}},
		{name: "watcher ClusterRoleBinding", kind: "ClusterRoleBinding", object: "local-volume-provisioner-watcher", field: []string{"subjects"}},
		{name: "memory of unwiped disks", kind: "CustomResourceDefinition", object: "unwipeddisks.localpv.nodeplug.io", field: []string{"spec"}},
		{name: "fast StorageClass", kind: "StorageClass", object: "local-fast", field: []string{"reclaimPolicy"}},
		{name: "block StorageClass binding mode", kind: "StorageClass", object: "local-block", field: []string{"volumeBindingMode"}},
		{name: "master pod security", kind: "Deployment", object: "local-volume-provisioner-master", field: []string{"spec", "template", "spec", "securityContext"}},
		{name: "master replicas", kind: "Deployment", object: "local-volume-provisioner-master", field: []string{"spec", "replicas"}},
		{name: "master containers", kind: "Deployment", object: "local-volume-provisioner-master", field: []string{"spec", "template", "spec", "containers"}},
		{name: "watcher update strategy", kind: "DaemonSet", object: "local-volume-provisioner-watcher", field: []string{"spec", "updateStrategy"}},
		{name: "watcher tolerations", kind: "DaemonSet", object: "local-volume-provisioner-watcher", field: []string{"spec", "template", "spec", "tolerations"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			want := kustomizeObject(t, tc.kind, tc.object)
			var got map[string]any
			for _, o := range r.objs {
				if o.GetKind() == tc.kind && o.GetName() == tc.object {
					got = o.Object
				}
			}
			if got == nil {
				t.Fatalf("no %s %s in the chart; have %v", tc.kind, tc.object, r.names())
			}
			if diff := cmp.Diff(field(want.Object, tc.field), field(got, tc.field)); diff != "" {
				t.Errorf("%s of %s %s differs from the kustomize manifest (-kustomize +chart):\n%s", tc.field, tc.kind, tc.object, diff)
			}
		})
	}
}

func TestDefaultsConfigMatchesKustomize(t *testing.T) {
	r := render(t, testRelease, testNS, nil)
	got := r.config("local-volume-provisioner-config")
	cm := &corev1.ConfigMap{}

	mustConvert(t, kustomizeObject(t, "ConfigMap", "local-volume-provisioner-config").Object, cm)
	want, _, err := config.Parse(cm.Data)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got, cmpopts.IgnoreUnexported(config.Configuration{})); diff != "" {
		t.Errorf("the chart's default configuration differs from config.yaml's (-kustomize +chart):\n%s", diff)
	}
}

// TestDefaultsWatcherMountsMatchKustomize compares the watcher's container
// and mounts by path: the chart names class volumes after their index.
func TestDefaultsWatcherMountsMatchKustomize(t *testing.T) {
	r := render(t, testRelease, testNS, nil)
	got := r.daemonSet("local-volume-provisioner-watcher")
	want := r.daemonSet("local-volume-provisioner-watcher")
	mustConvert(t, kustomizeObject(t, "DaemonSet", "local-volume-provisioner-watcher").Object, want)
	gc := container(t, got.Spec.Template.Spec, "watcher")
	wc := container(t, want.Spec.Template.Spec, "watcher")
	if diff := cmp.Diff(mountsByPath(want.Spec.Template.Spec, wc), mountsByPath(got.Spec.Template.Spec, gc)); diff != "" {
		t.Errorf("watcher mounts differ (-kustomize +chart):\n%s", diff)
	}
	gc.VolumeMounts, wc.VolumeMounts = nil, nil
	if diff := cmp.Diff(wc, gc); diff != "" {
		t.Errorf("watcher container differs (-kustomize +chart):\n%s", diff)
	}
}

type mount struct {
	HostPath, Type, Propagation string
	ReadOnly                    bool
	ConfigMap                   string
}

func mountsByPath(spec corev1.PodSpec, c corev1.Container) map[string]mount {
	vols := map[string]corev1.Volume{}
	for _, v := range spec.Volumes {
		vols[v.Name] = v
	}
	out := map[string]mount{}
	for _, m := range c.VolumeMounts {
		v := vols[m.Name]
		mm := mount{ReadOnly: m.ReadOnly}
		if m.MountPropagation != nil {
			mm.Propagation = string(*m.MountPropagation)
		}
		if v.HostPath != nil {
			mm.HostPath = v.HostPath.Path
			if v.HostPath.Type != nil {
				mm.Type = string(*v.HostPath.Type)
			}
		}
		if v.ConfigMap != nil {
			mm.ConfigMap = v.ConfigMap.Name
		}
		out[m.MountPath] = mm
	}
	return out
}

func field(obj map[string]any, path []string) any {
	var cur any = obj
	for _, p := range path {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = m[p]
	}
	return cur
}

// TestCRDsAreKept: helm uninstall keeps both CRDs: the NodeDiskStates
// (every node's inventory) and the memory of unwiped disks, which every
// installation in the cluster shares; the chart ships no ConfigMap memory.
func TestCRDsAreKept(t *testing.T) {
	r := render(t, testRelease, testNS, nil)
	for _, name := range []string{"nodediskstates.localpv.nodeplug.io", "unwipeddisks.localpv.nodeplug.io"} {
		t.Run(name, func(t *testing.T) {
			for _, o := range r.objs {
				if o.GetKind() == "CustomResourceDefinition" && o.GetName() == name {
					if got := o.GetAnnotations()["helm.sh/resource-policy"]; got != "keep" {
						t.Errorf("resource policy %q, want keep", got)
					}
					return
				}
			}
			t.Errorf("no CRD %s in the chart; have %v", name, r.names())
		})
	}
	for _, o := range r.objs {
		if o.GetKind() == "ConfigMap" && o.GetName() == "local-volume-provisioner-unwiped-disks" {
			t.Error("the chart ships the legacy memory of unwiped disks")
		}
	}
}

// TestSecondReleaseLeavesTheCRDs: one release per cluster owns the
// cluster-scoped CRDs; another release, in another namespace, sets
// nodeplug.installCRDs to false and renders neither, since Helm refuses a
// second owner of an object.
func TestSecondReleaseLeavesTheCRDs(t *testing.T) {
	for _, tc := range []struct {
		name    string
		values  map[string]any
		wantCRD bool
	}{
		{name: "default", wantCRD: true},
		{name: "installCRDs false", values: map[string]any{"nodeplug": map[string]any{"installCRDs": false}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := render(t, "second", "storage-b", tc.values)
			var crds []string
			for _, o := range r.objs {
				if o.GetKind() == "CustomResourceDefinition" {
					crds = append(crds, o.GetName())
				}
			}
			if got := len(crds) == 2; got != tc.wantCRD || (!tc.wantCRD && len(crds) != 0) {
				t.Errorf("CRDs %v, want both: %v", crds, tc.wantCRD)
			}
			if r.deployment("second-local-volume-provisioner-master") == nil {
				t.Error("no master rendered")
			}
		})
	}
}
