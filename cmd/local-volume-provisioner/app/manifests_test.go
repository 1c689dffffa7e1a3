package app

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/cel-go/cel"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/nodeplug/localpv-api/config/crd"
	"github.com/nodeplug/nodeplug/pkg/localpv/config"
	"github.com/nodeplug/nodeplug/pkg/localpv/controller"
	"github.com/nodeplug/nodeplug/pkg/localpv/controller/blockedclaims"
	"github.com/nodeplug/nodeplug/pkg/localpv/unwiped"
)

const deployDir = "../../../deploy/local-volume-provisioner"

// TestMemoryShipsApart: the UnwipedDisk CRD ships in its own directory,
// which the provisioner's kustomization does not list, so that deleting an
// installation keeps every installation's memory of unwiped disks.
func TestMemoryShipsApart(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(deployDir, "memory", "crd.yaml"))
	if err != nil || !bytes.Equal(b, crd.UnwipedDisksYAML) {
		t.Errorf("memory/crd.yaml differs from the UnwipedDisk CRD in the localpv-api module (%v)", err)
	}
	k, err := os.ReadFile(filepath.Join(deployDir, "memory", "kustomization.yaml"))
	if err != nil || !bytes.Contains(k, []byte("- crd.yaml")) {
		t.Errorf("memory/kustomization.yaml does not list crd.yaml (%v)", err)
	}
	main, err := os.ReadFile(filepath.Join(deployDir, "kustomization.yaml"))
	if err != nil || bytes.Contains(main, []byte("memory")) {
		t.Errorf("the provisioner's kustomization lists the memory, which its deletion would then delete (%v)", err)
	}
	if unwiped.CRDManifest != "deploy/local-volume-provisioner/memory/crd.yaml" {
		t.Errorf("unwiped.CRDManifest = %s", unwiped.CRDManifest)
	}
}

// loadManifests decodes every document of the deploy directory.
func loadManifests(t *testing.T) []runtime.Object {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(deployDir, "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no manifests: %v", err)
	}
	var out []runtime.Object
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		switch filepath.Base(f) {
		case "crd.yaml":
			if !bytes.Equal(b, crd.NodeDiskStatesYAML) {
				t.Errorf("%s differs from the CRD in the localpv-api module", f)
			}
			continue
		case "kustomization.yaml":
			for _, other := range files {
				if base := filepath.Base(other); base != "kustomization.yaml" && !bytes.Contains(b, []byte("- "+base)) {
					t.Errorf("kustomization.yaml does not list %s", base)
				}
			}
			continue
		}
		for _, doc := range strings.Split(string(b), "\n---\n") {
			obj, _, err := scheme.Codecs.UniversalDeserializer().Decode([]byte(doc), nil, nil)
			if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			out = append(out, obj)
		}
	}
	return out
}

func TestManifests(t *testing.T) {
	objs := loadManifests(t)
	var cfg *config.Configuration
	var watcher *appsv1.DaemonSet
	var master *appsv1.Deployment
	policies, bindings := map[string]*admissionv1.ValidatingAdmissionPolicy{}, map[string]string{}
	pvWriters := []string{}
	for _, o := range objs {
		switch o := o.(type) {
		case *v1.Namespace:
			if o.Labels["pod-security.kubernetes.io/enforce"] == "" {
				t.Error("namespace has no Pod Security label")
			}
		case *v1.ConfigMap:
			if o.Name == unwiped.LegacyConfigMapName {
				t.Errorf("the manifests ship the legacy memory of unwiped disks, ConfigMap %s", o.Name)
				continue
			}
			var err error
			if cfg, _, err = config.Parse(o.Data); err != nil {
				t.Fatalf("example ConfigMap is invalid: %v", err)
			}
		case *appsv1.DaemonSet:
			watcher = o
		case *appsv1.Deployment:
			master = o
		case *rbacv1.ClusterRole:
			for _, r := range o.Rules {
				if slices.Contains(r.Resources, "persistentvolumes") && slices.ContainsFunc(r.Verbs, isWrite) {
					pvWriters = append(pvWriters, o.Name)
				}
				if slices.Contains(r.Resources, "validatingadmissionpolicies") && slices.ContainsFunc(r.Verbs, isWrite) &&
					(o.Name != "local-volume-provisioner-master" ||
						!slices.Equal(r.ResourceNames, []string{controller.ReplacedMachineAdmissionPolicy})) {
					t.Errorf("ClusterRole %s may write admission policies other than %s alone: %v", o.Name,
						controller.ReplacedMachineAdmissionPolicy, r)
				}
			}
		case *admissionv1.ValidatingAdmissionPolicy:
			policies[o.Name] = o
		case *admissionv1.ValidatingAdmissionPolicyBinding:
			bindings[o.Name] = o.Spec.PolicyName
		}
	}
	if !slices.Equal(pvWriters, []string{"local-volume-provisioner-master"}) {
		t.Errorf("PV writers = %v, want only the master", pvWriters)
	}
	if master == nil || *master.Spec.Replicas != 2 || !slices.Contains(master.Spec.Template.Spec.Containers[0].Args, "--leader-elect=true") {
		t.Error("master must be a 2-replica Deployment with leader election")
	}
	for _, ps := range []*v1.PodSpec{&master.Spec.Template.Spec, &watcher.Spec.Template.Spec} {
		for _, c := range ps.Containers {
			if c.Image != "nodeplug/local-volume-provisioner:dev" || c.ImagePullPolicy != v1.PullIfNotPresent {
				t.Errorf("container %s: image %s %s", c.Name, c.Image, c.ImagePullPolicy)
			}
		}
	}
	for _, ps := range []*v1.PodSpec{&master.Spec.Template.Spec, &watcher.Spec.Template.Spec} {
		for _, c := range ps.Containers {
			checkTerminationPath(t, c)
		}
	}
	mounts := map[string]v1.VolumeMount{}
	for _, m := range watcher.Spec.Template.Spec.Containers[0].VolumeMounts {
		mounts[m.MountPath] = m
	}
	for name, mc := range cfg.StorageClassMap {
		m, ok := mounts[mc.MountDir]
		if !ok || m.MountPropagation == nil || *m.MountPropagation != v1.MountPropagationHostToContainer {
			t.Errorf("watcher does not mount class %s at %s with HostToContainer propagation", name, mc.MountDir)
		}
	}
	checkPolicy(t, policies, bindings, watcher)
}

func checkPolicy(t *testing.T, policies map[string]*admissionv1.ValidatingAdmissionPolicy, bindings map[string]string, watcher *appsv1.DaemonSet) {
	t.Helper()
	if len(policies) != 2 {
		t.Fatalf("want two admission policies, got %d", len(policies))
	}
	for name, p := range policies {
		found := false
		for _, pol := range bindings {
			found = found || pol == name
		}
		if !found {
			t.Errorf("policy %s has no binding", name)
		}
		if name == "local-volume-provisioner-replaced-machine-claims" {
			checkClaimsPolicy(t, p)
			continue
		}
		user := "system:serviceaccount:" + watcher.Namespace + ":" + watcher.Spec.Template.Spec.ServiceAccountName
		if len(p.Spec.MatchConditions) != 1 || !strings.Contains(p.Spec.MatchConditions[0].Expression, user) {
			t.Errorf("policy %s does not match the watcher's user %s", name, user)
		}
		if !strings.Contains(p.Spec.Variables[0].Expression, "authentication.kubernetes.io/node-name") {
			t.Errorf("policy %s does not use the node-name claim", name)
		}
		exprs := []string{p.Spec.MatchConditions[0].Expression}
		for _, v := range p.Spec.Variables {
			exprs = append(exprs, v.Expression)
		}
		for _, v := range p.Spec.Validations {
			exprs = append(exprs, v.Expression, v.MessageExpression)
		}
		checkCEL(t, exprs)
	}
}

// checkTerminationPath fails when a container's termination message file,
// the kubelet's default when unset, lies under one of its volume mounts: the
// kubelet cannot create it in a read-only mount such as the host's /dev.
func checkTerminationPath(t *testing.T, c v1.Container) {
	t.Helper()
	path := c.TerminationMessagePath
	if path == "" {
		path = v1.TerminationMessagePathDefault
	}
	for _, m := range c.VolumeMounts {
		if path == m.MountPath || strings.HasPrefix(path, strings.TrimSuffix(m.MountPath, "/")+"/") {
			t.Errorf("container %s: terminationMessagePath %s lies under mount %s", c.Name, path, m.MountPath)
		}
	}
}

func isWrite(verb string) bool {
	return verb == "*" || verb == "create" || verb == "update" || verb == "patch" || verb == "delete" || verb == "deletecollection"
}

// checkCEL compiles each expression with the admission variables declared as
// dynamic values, which catches syntax errors and unknown top-level names.
// checkClaimsPolicy checks the policy of blocked claims: it reads no params
// (kubernetes/kubernetes#133827 can leave a re-created binding without
// them), its first variable is the one the master writes, and its CEL
// compiles.
func checkClaimsPolicy(t *testing.T, p *admissionv1.ValidatingAdmissionPolicy) {
	t.Helper()
	if p.Spec.ParamKind != nil {
		t.Errorf("policy %s takes params; the master writes the blocked claims into the policy itself", p.Name)
	}
	if len(p.Spec.Variables) == 0 || p.Spec.Variables[0].Name != blockedclaims.Variable {
		t.Errorf("policy %s does not start with the variable %s", p.Name, blockedclaims.Variable)
	}
	exprs := []string{}
	for _, v := range p.Spec.Variables {
		exprs = append(exprs, v.Expression)
	}
	for _, v := range p.Spec.Validations {
		exprs = append(exprs, v.Expression, v.MessageExpression)
	}
	checkCEL(t, exprs)
}

func checkCEL(t *testing.T, exprs []string) {
	t.Helper()
	env, err := cel.NewEnv(cel.Variable("request", cel.DynType), cel.Variable("object", cel.DynType),
		cel.Variable("oldObject", cel.DynType), cel.Variable("variables", cel.DynType), cel.Variable("params", cel.DynType))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range exprs {
		if e == "" {
			continue
		}
		if _, iss := env.Compile(e); iss.Err() != nil {
			t.Errorf("CEL expression %q does not compile: %v", e, iss.Err())
		}
	}
}
