package chartrender

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	dynamicfake "k8s.io/client-go/dynamic/fake"
)

// TestNamespacePodSecurity: an install into a namespace whose Pod Security
// level would refuse the provisioner's pods fails and names the fix.
func TestNamespacePodSecurity(t *testing.T) {
	tests := []struct {
		name    string
		labels  map[string]string
		values  map[string]any
		wantErr string
	}{
		{name: "privileged", labels: map[string]string{"pod-security.kubernetes.io/enforce": "privileged"}},
		{name: "no label", labels: nil},
		{name: "baseline", labels: map[string]string{"pod-security.kubernetes.io/enforce": "baseline"},
			wantErr: `namespace local-volume-provisioner: Pod Security enforces "baseline"`},
		{name: "restricted, check off", labels: map[string]string{"pod-security.kubernetes.io/enforce": "restricted"},
			values: map[string]any{"nodeplug": map[string]any{"checkNamespacePodSecurity": false}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: testNS, Labels: tc.labels}}
			ns.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Namespace"))
			_, err := Render(Options{ChartDir: DefaultChartDir("."), Release: testRelease, Namespace: testNS,
				Values: tc.values, Cluster: newFakeCluster(t, ns)})
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("render: %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("error %v; want %q", err, tc.wantErr)
			case tc.wantErr != "" && !strings.Contains(err.Error(), "kubectl label namespace local-volume-provisioner pod-security.kubernetes.io/enforce=privileged"):
				t.Errorf("error %v does not name the fix", err)
			}
		})
	}
}

// fakeCluster answers lookup calls from a fake dynamic client.
type fakeCluster struct {
	client *dynamicfake.FakeDynamicClient
}

func newFakeCluster(t *testing.T, objs ...runtime.Object) *fakeCluster {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := corev1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	return &fakeCluster{client: dynamicfake.NewSimpleDynamicClient(scheme, objs...)}
}

func (f *fakeCluster) GetClientFor(apiVersion, kind string) (dynamic.NamespaceableResourceInterface, bool, error) {
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return nil, false, err
	}
	resource := strings.ToLower(kind) + "s"
	return f.client.Resource(gv.WithResource(resource)), kind != "Namespace", nil
}
