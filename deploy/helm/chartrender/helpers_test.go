package chartrender

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/nodeplug/nodeplug/pkg/localpv/config"
)

const (
	kustomizeDir = "../../local-volume-provisioner"
	testNS       = "local-volume-provisioner"
	testRelease  = "local-volume-provisioner"
)

// rendered is a rendered chart, indexed by kind and name.
type rendered struct {
	t    *testing.T
	objs []*unstructured.Unstructured
}

func render(t *testing.T, release, namespace string, values map[string]any) *rendered {
	t.Helper()
	objs, err := Render(Options{ChartDir: DefaultChartDir("."), Release: release, Namespace: namespace, Values: values})
	if err != nil {
		t.Fatalf("render: %v", err)
	}
	return &rendered{t: t, objs: objs}
}

func readValues(t *testing.T, path string) map[string]any {
	t.Helper()
	v, err := ReadValues(path)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// get returns the object of that kind and name, decoded into out.
func (r *rendered) get(kind, name string, out any) {
	r.t.Helper()
	for _, o := range r.objs {
		if o.GetKind() == kind && o.GetName() == name {
			if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(o.Object, out, true); err != nil {
				r.t.Fatalf("%s %s: %v", kind, name, err)
			}
			return
		}
	}
	r.t.Fatalf("no %s %s in the rendered chart; have %v", kind, name, r.names())
}

func (r *rendered) names() []string {
	var names []string
	for _, o := range r.objs {
		names = append(names, o.GetKind()+"/"+o.GetName())
	}
	return names
}

// config parses the rendered ConfigMap as the master does.
func (r *rendered) config(name string) *config.Configuration {
	r.t.Helper()
	cm := &corev1.ConfigMap{}
	r.get("ConfigMap", name, cm)
	cfg, warnings, err := config.Parse(cm.Data)
	if err != nil {
		r.t.Fatalf("the master refuses the rendered ConfigMap: %v\n%v", err, cm.Data)
	}
	if len(warnings) > 0 {
		r.t.Errorf("the rendered ConfigMap has keys the master ignores: %v", warnings)
	}
	return cfg
}

func (r *rendered) daemonSet(name string) *appsv1.DaemonSet {
	ds := &appsv1.DaemonSet{}
	r.get("DaemonSet", name, ds)
	return ds
}

func (r *rendered) deployment(name string) *appsv1.Deployment {
	d := &appsv1.Deployment{}
	r.get("Deployment", name, d)
	return d
}

// kustomizeObject returns the object of that kind and name in
// deploy/local-volume-provisioner.
func kustomizeObject(t *testing.T, kind, name string) *unstructured.Unstructured {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(kustomizeDir, "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	// The memory of unwiped disks ships apart, in memory/.
	memory, err := filepath.Glob(filepath.Join(kustomizeDir, "memory", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range append(files, memory...) {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		dec := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(string(raw)), 4096)
		for {
			var m map[string]any
			if err := dec.Decode(&m); err != nil {
				break
			}
			o := &unstructured.Unstructured{Object: m}
			if o.GetKind() == kind && o.GetName() == name {
				return o
			}
		}
	}
	t.Fatalf("no %s %s in %s", kind, name, kustomizeDir)
	return nil
}

func container(t *testing.T, spec corev1.PodSpec, name string) corev1.Container {
	t.Helper()
	for _, c := range spec.Containers {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("no container %s", name)
	return corev1.Container{}
}

func hasArg(args []string, arg string) bool {
	for _, a := range args {
		if a == arg {
			return true
		}
	}
	return false
}

func mustConvert(t *testing.T, obj map[string]any, out any) {
	t.Helper()
	if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(obj, out, true); err != nil {
		t.Fatal(err)
	}
}
