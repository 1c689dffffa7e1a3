package localpv

import (
	"errors"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2/ktesting"

	"github.com/nodeplug/localpv-api/config/crd"
	"github.com/nodeplug/localpv-api/localpv/v1alpha1"
	"github.com/nodeplug/nodeplug/pkg/localpv/controller"
	"github.com/nodeplug/nodeplug/test/integration/framework"
)

// TestMasterStartsWithoutCRD runs the master's start-up check, as the
// master's ServiceAccount, against an apiserver without the NodeDiskState
// CRD: it gives up promptly with one error that names the CRD and its
// manifest, and succeeds once the CRD is applied while it waits.
func TestMasterStartsWithoutCRD(t *testing.T) {
	cp := framework.StartAPIServer(t)
	dyn, err := dynamic.NewForConfig(cp.Config)
	if err != nil {
		t.Fatal(err)
	}
	e := &env{cp: cp, dyn: dyn}
	disco := discovery.ToServerResourcesInterfaceWithContext(kubernetes.NewForConfigOrDie(asMaster(cp.Config)).Discovery())
	_, ctx := ktesting.NewTestContext(t)

	// What the NodeDiskState informer of the master gets without the CRD.
	_, err = dyn.Resource(v1alpha1.SchemeGroupVersionResource).List(ctx, metav1.ListOptions{})
	if !apierrors.IsNotFound(err) {
		t.Fatalf("listing NodeDiskStates without the CRD: %v, want NotFound", err)
	}

	t.Run("no CRD: one clear error, promptly", func(t *testing.T) {
		start := time.Now()
		err := controller.WaitForNodeDiskStateAPI(ctx, disco, 100*time.Millisecond, time.Second)
		took := time.Since(start)
		if !errors.Is(err, controller.ErrNodeDiskStateAPIMissing) {
			t.Fatalf("error %v, want ErrNodeDiskStateAPIMissing", err)
		}
		for _, want := range []string{"nodediskstates.localpv.nodeplug.io is not installed", "apply deploy/local-volume-provisioner/crd.yaml"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error %q does not contain %q", err, want)
			}
		}
		if took > 5*time.Second {
			t.Errorf("gave up after %s, want about the 1 s timeout", took)
		}
	})

	t.Run("CRD applied while the master waits", func(t *testing.T) {
		done := make(chan error, 1)
		go func() { done <- controller.WaitForNodeDiskStateAPI(ctx, disco, 100*time.Millisecond, pollTimeout) }()
		e.apply(t, crd.NodeDiskStatesYAML)
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("the wait failed after the CRD was applied: %v", err)
			}
		case <-time.After(pollTimeout + 10*time.Second):
			t.Fatal("the wait did not return")
		}
		if _, err := dyn.Resource(v1alpha1.SchemeGroupVersionResource).List(ctx, metav1.ListOptions{}); err != nil {
			t.Errorf("listing NodeDiskStates after the wait: %v", err)
		}
	})
}
