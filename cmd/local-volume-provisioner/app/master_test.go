package app

import (
	"context"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2/ktesting"

	"github.com/nodeplug/localpv-api/localpv/v1alpha1"
	"github.com/nodeplug/nodeplug/cmd/local-volume-provisioner/app/options"
	"github.com/nodeplug/nodeplug/pkg/localpv/config"
	"github.com/nodeplug/nodeplug/pkg/localpv/naming"
)

// TestRunControllerWiring starts the real informer wiring against fake
// clients and waits, boundedly, for the start-up discovery Job.
func TestRunControllerWiring(t *testing.T) {
	cfg, _, err := config.Parse(map[string]string{config.KeyStorageClassMap: "fast: {hostDir: /mnt/fast}"})
	if err != nil {
		t.Fatal(err)
	}
	node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "a", Labels: map[string]string{v1.LabelHostname: "a"}}}
	kube := fake.NewClientset(node)
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{v1alpha1.SchemeGroupVersionResource: v1alpha1.ListKind})
	o := options.NewMasterOptions()
	o.Namespace, o.Image = "lpv", "nodeplug/local-volume-provisioner:dev"
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan error)
	go func() { done <- runController(ctx, o, cfg, kube, dyn, record.NewFakeRecorder(100)) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("runController: %v", err)
		}
	}()
	err = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := kube.BatchV1().Jobs("lpv").Get(ctx, naming.DiscoveryJobName("a"), metav1.GetOptions{})
		return err == nil, nil
	})
	if err != nil {
		t.Fatalf("no discovery Job for node a: %v", err)
	}
}

func TestStripManagedFields(t *testing.T) {
	mf := []metav1.ManagedFieldsEntry{{Manager: "kubelet", Operation: metav1.ManagedFieldsOperationUpdate}}
	cases := map[string]struct {
		in   any
		want func(t *testing.T, out any)
	}{
		"node loses managedFields": {
			in: &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "a", ManagedFields: mf}},
			want: func(t *testing.T, out any) {
				if n := out.(*v1.Node); n.ManagedFields != nil || n.Name != "a" {
					t.Errorf("got %+v", n.ObjectMeta)
				}
			},
		},
		"tombstone passes through": {
			in: cache.DeletedFinalStateUnknown{Key: "a"},
			want: func(t *testing.T, out any) {
				if _, ok := out.(cache.DeletedFinalStateUnknown); !ok {
					t.Errorf("got %T", out)
				}
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			out, err := stripManagedFields(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			tc.want(t, out)
		})
	}
}
