package helm

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/nodeplug/nodeplug/test/integration/framework"
)

// ignoredResources change on their own while the apiserver runs (its
// leases) or are records, not objects a release owns.
var ignoredResources = map[string]bool{"leases.coordination.k8s.io": true, "events": true, "events.events.k8s.io": true}

// snapshot lists every object of every listable resource: one line
// "resource namespace/name" each, sorted.
func snapshot(ctx context.Context, t *testing.T, cfg *rest.Config) []string {
	t.Helper()
	dc := discovery.NewDiscoveryClientForConfigOrDie(cfg)
	dyn := dynamic.NewForConfigOrDie(cfg)
	lists, err := dc.ServerPreferredResources()
	if err != nil {
		t.Fatalf("discovery: %v", err)
	}
	var keys []string
	for _, list := range lists {
		gv, err := schema.ParseGroupVersion(list.GroupVersion)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range list.APIResources {
			gr := schema.GroupResource{Group: gv.Group, Resource: r.Name}.String()
			if ignoredResources[gr] || strings.Contains(r.Name, "/") || !slices.Contains(r.Verbs, "list") {
				continue
			}
			objs, err := dyn.Resource(gv.WithResource(r.Name)).List(ctx, metav1.ListOptions{})
			if err != nil {
				t.Fatalf("listing %s: %v", gr, err)
			}
			for _, o := range objs.Items {
				keys = append(keys, fmt.Sprintf("%s %s/%s", gr, o.GetNamespace(), o.GetName()))
			}
		}
	}
	slices.Sort(keys)
	return keys
}

// compare returns the objects added or removed between two snapshots, but
// the added ones listed in kept.
func compare(before, after []string, kept ...string) string {
	var diff []string
	for _, k := range after {
		if _, found := slices.BinarySearch(before, k); !found && !slices.Contains(kept, k) {
			diff = append(diff, "+ "+k)
		}
	}
	for _, k := range before {
		if _, found := slices.BinarySearch(after, k); !found {
			diff = append(diff, "- "+k)
		}
	}
	return strings.Join(diff, "\n")
}

func wantMaster(ctx context.Context, t *testing.T, cp *framework.ControlPlane, image string) {
	t.Helper()
	d, err := cp.Client.AppsV1().Deployments(namespace).Get(ctx, prefix+"-master", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the master Deployment: %v", err)
	}
	if got := d.Spec.Template.Spec.Containers[0].Image; got != image {
		t.Errorf("master image %q, want %q", got, image)
	}
}

// wantClass checks that the provisioner's configuration names class.
func wantClass(ctx context.Context, t *testing.T, cp *framework.ControlPlane, class string) {
	t.Helper()
	cm, err := cp.Client.CoreV1().ConfigMaps(namespace).Get(ctx, prefix+"-config", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the provisioner's ConfigMap: %v", err)
	}
	for _, v := range cm.Data {
		if strings.Contains(v, class+":") {
			return
		}
	}
	t.Errorf("the provisioner's configuration has no class %s: %v", class, cm.Data)
}

// createServiceMonitorCRD installs a schemaless stand-in for
// prometheus-operator's ServiceMonitor CRD and waits until it is served.
func createServiceMonitorCRD(ctx context.Context, t *testing.T, cfg *rest.Config) {
	t.Helper()
	client := apiextensionsclient.NewForConfigOrDie(cfg)
	preserve := true
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "servicemonitors.monitoring.coreos.com"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "monitoring.coreos.com",
			Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "servicemonitors", Singular: "servicemonitor", Kind: "ServiceMonitor", ListKind: "ServiceMonitorList"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object", XPreserveUnknownFields: &preserve}}}},
		},
	}
	if _, err := client.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, crd, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		got, err := client.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, crd.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, c := range got.Status.Conditions {
			if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("the ServiceMonitor CRD is not established: %v", err)
	}
}
