// Package coredns checks the manifests of this directory, rendered as
// kubectl apply -k renders them (render), against what the rest of the local
// cluster expects of its DNS: the kubelets' clusterDNS and clusterDomain
// (hack/lib/node-config.sh), the image build/coredns makes, the ports the
// Corefile's plugins serve, and the rights CoreDNS's kubernetes plugin
// needs.
package coredns

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/yaml"
)

const (
	namespace  = "kube-system"
	label      = "k8s-app"
	labelValue = "kube-dns" // kubeadm's; upstream's e2e DNS specs select on it
	nodeConfig = "../../hack/lib/node-config.sh"
	clusterSh  = "../../hack/lib/cluster.sh"
	imageArgs  = "../../build/coredns/image.args"
	// corednsGoMod pins the CoreDNS release the image is built from.
	corednsGoMod = "../../hack/tools/coredns/go.mod"
)

// objects is the rendered kustomization, by kind.
type objects struct {
	deployments     []*appsv1.Deployment
	services        []*v1.Service
	configMaps      []*v1.ConfigMap
	serviceAccounts []*v1.ServiceAccount
	clusterRoles    []*rbacv1.ClusterRole
	bindings        []*rbacv1.ClusterRoleBinding
	other           []runtime.Object
}

// kustomization is what this directory's kustomization.yaml may say;
// anything else fails the test (render would not apply it).
type kustomization struct {
	APIVersion         string   `json:"apiVersion"`
	Kind               string   `json:"kind"`
	Resources          []string `json:"resources"`
	ConfigMapGenerator []struct {
		Name      string   `json:"name"`
		Namespace string   `json:"namespace"`
		Files     []string `json:"files"`
		Options   struct {
			DisableNameSuffixHash bool              `json:"disableNameSuffixHash"`
			Labels                map[string]string `json:"labels"`
		} `json:"options"`
	} `json:"configMapGenerator"`
}

// render builds this directory as kubectl apply -k does (its resources,
// and the ConfigMap its generator makes of the Corefile) and decodes it.
// Every manifest of the directory must be a resource of the kustomization.
func render(t *testing.T) objects {
	t.Helper()
	b, err := os.ReadFile("kustomization.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var k kustomization
	if err := yaml.UnmarshalStrict(b, &k); err != nil {
		t.Fatalf("kustomization.yaml: %v", err)
	}
	files, err := filepath.Glob("*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	files = slices.DeleteFunc(files, func(f string) bool { return f == "kustomization.yaml" })
	if !slices.Equal(files, slices.Sorted(slices.Values(k.Resources))) {
		t.Fatalf("kustomization.yaml lists %v, the directory has %v", k.Resources, files)
	}
	var out objects
	for _, f := range k.Resources {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, doc := range strings.Split(string(b), "\n---\n") {
			obj, _, err := scheme.Codecs.UniversalDeserializer().Decode([]byte(doc), nil, nil)
			if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			out.add(obj)
		}
	}
	for _, g := range k.ConfigMapGenerator {
		if !g.Options.DisableNameSuffixHash {
			t.Errorf("ConfigMap %s gets a hash suffix: the Deployment would name it, but upstream's DNS specs and operators look for %s", g.Name, g.Name)
		}
		cm := &v1.ConfigMap{Data: map[string]string{}}
		cm.Name, cm.Namespace, cm.Labels = g.Name, g.Namespace, g.Options.Labels
		for _, f := range g.Files {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			cm.Data[filepath.Base(f)] = string(b)
		}
		out.add(cm)
	}
	if len(out.deployments) != 1 || len(out.services) != 1 || len(out.configMaps) != 1 ||
		len(out.serviceAccounts) != 1 || len(out.clusterRoles) != 1 || len(out.bindings) != 1 || len(out.other) != 0 {
		t.Fatalf("rendered %d Deployments, %d Services, %d ConfigMaps, %d ServiceAccounts, %d ClusterRoles, %d ClusterRoleBindings and %d others; want one of each and no other",
			len(out.deployments), len(out.services), len(out.configMaps), len(out.serviceAccounts), len(out.clusterRoles), len(out.bindings), len(out.other))
	}
	return out
}

func (o *objects) add(obj runtime.Object) {
	switch obj := obj.(type) {
	case *appsv1.Deployment:
		o.deployments = append(o.deployments, obj)
	case *v1.Service:
		o.services = append(o.services, obj)
	case *v1.ConfigMap:
		o.configMaps = append(o.configMaps, obj)
	case *v1.ServiceAccount:
		o.serviceAccounts = append(o.serviceAccounts, obj)
	case *rbacv1.ClusterRole:
		o.clusterRoles = append(o.clusterRoles, obj)
	case *rbacv1.ClusterRoleBinding:
		o.bindings = append(o.bindings, obj)
	default:
		o.other = append(o.other, obj)
	}
}

// shellValue returns the first submatch of re in file.
func shellValue(t *testing.T, file, re string) string {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(re).FindSubmatch(b)
	if m == nil {
		t.Fatalf("%s has no match for %s", file, re)
	}
	return string(m[1])
}

// imageArg returns the value after flag in build/coredns/image.args.
func imageArg(t *testing.T, flag string) string {
	t.Helper()
	b, err := os.ReadFile(imageArgs)
	if err != nil {
		t.Fatal(err)
	}
	var args []string
	for _, l := range strings.Split(string(b), "\n") {
		if l != "" && !strings.HasPrefix(l, "#") {
			args = append(args, l)
		}
	}
	i := slices.Index(args, flag)
	if i < 0 || i+1 >= len(args) {
		t.Fatalf("%s has no %s", imageArgs, flag)
	}
	return args[i+1]
}

// corefileDirectives returns the Corefile's lines that start a directive
// (their words), one level inside the server block, and the block's keys.
func corefileDirectives(t *testing.T, corefile string) (keys []string, dirs [][]string) {
	t.Helper()
	depth := 0
	for _, l := range strings.Split(corefile, "\n") {
		w := strings.Fields(l)
		if len(w) == 0 || strings.HasPrefix(w[0], "#") {
			continue
		}
		switch {
		case depth == 0 && w[len(w)-1] == "{":
			keys = append(keys, w[:len(w)-1]...)
		case depth == 1 && w[0] != "}":
			dirs = append(dirs, w)
		}
		depth += strings.Count(l, "{") - strings.Count(l, "}")
	}
	if depth != 0 {
		t.Fatalf("the Corefile's braces do not balance")
	}
	return keys, dirs
}

func directive(dirs [][]string, name string) []string {
	for _, d := range dirs {
		if d[0] == name {
			return d
		}
	}
	return nil
}

func readCorefile(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("Corefile")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func sortedPairs(m map[string]string) []string {
	var out []string
	for k, v := range m {
		out = append(out, k+"="+v)
	}
	slices.Sort(out)
	return out
}

func portString(port int32, proto v1.Protocol) string { return itoa(int64(port)) + "/" + string(proto) }

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

func atoi(t *testing.T, s string) int32 {
	t.Helper()
	n, err := strconv.ParseInt(s, 10, 32)
	if err != nil {
		t.Fatalf("port %q: %v", s, err)
	}
	return int32(n)
}

// equal compares the checks' values: slices element-wise, the rest by ==.
func equal(a, b any) bool {
	if as, ok := a.([]v1.Capability); ok {
		bs, _ := b.([]v1.Capability)
		return slices.Equal(as, bs)
	}
	return a == b
}
