package localpv

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/restmapper"

	"github.com/nodeplug/localpv-api/config/crd"
	"github.com/nodeplug/localpv-api/localpv/v1alpha1"
	"github.com/nodeplug/nodeplug/test/integration/framework"
)

const (
	deployDir = "../../../deploy/local-volume-provisioner"
	// namespace is the one deploy/local-volume-provisioner/namespace.yaml creates.
	namespace = "local-volume-provisioner"
	// pollTimeout bounds every wait; the apiserver shares 2 cores with builds.
	pollTimeout = 60 * time.Second
)

var crdGVR = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// env is one apiserver with the provisioner's CRD and the given manifests
// from deploy/local-volume-provisioner applied.
type env struct {
	cp  *framework.ControlPlane
	dyn dynamic.Interface
}

func newEnv(t testing.TB, manifests ...string) *env {
	t.Helper()
	cp := framework.StartAPIServer(t)
	dyn, err := dynamic.NewForConfig(cp.Config)
	if err != nil {
		t.Fatal(err)
	}
	e := &env{cp: cp, dyn: dyn}
	e.apply(t, crd.NodeDiskStatesYAML)
	e.apply(t, crd.UnwipedDisksYAML) // the memory of unwiped disks, installed first
	e.waitForCRD(t)
	for _, m := range manifests {
		b, err := os.ReadFile(filepath.Join(deployDir, m))
		if err != nil {
			t.Fatal(err)
		}
		e.apply(t, b)
	}
	return e
}

// apply creates every document of a YAML stream, like kubectl create.
func (e *env) apply(t testing.TB, data []byte) {
	t.Helper()
	dc, err := discovery.NewDiscoveryClientForConfig(e.cp.Config)
	if err != nil {
		t.Fatal(err)
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); errors.Is(err, io.EOF) {
			return
		} else if err != nil {
			t.Fatalf("decoding manifest: %v", err)
		}
		if len(u.Object) == 0 {
			continue
		}
		gvk := u.GroupVersionKind()
		m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			t.Fatalf("no resource for %s: %v", gvk, err)
		}
		var ri dynamic.ResourceInterface = e.dyn.Resource(m.Resource)
		if m.Scope.Name() == meta.RESTScopeNameNamespace {
			ri = e.dyn.Resource(m.Resource).Namespace(u.GetNamespace())
		}
		if _, err := ri.Create(t.Context(), u, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatalf("creating %s %s: %v", gvk.Kind, u.GetName(), err)
		}
	}
}

// waitForCRD waits until NodeDiskState and UnwipedDisk are established and
// served.
func (e *env) waitForCRD(t testing.TB) {
	t.Helper()
	for _, gvr := range []schema.GroupVersionResource{v1alpha1.SchemeGroupVersionResource, v1alpha1.UnwipedDiskGroupVersionResource} {
		poll(t, gvr.Resource+" CRD established", func(ctx context.Context) (bool, error) {
			u, err := e.dyn.Resource(crdGVR).Get(ctx, gvr.Resource+"."+gvr.Group, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
			for _, c := range conds {
				if m, ok := c.(map[string]interface{}); ok && m["type"] == "Established" && m["status"] == "True" {
					_, err := e.dyn.Resource(gvr).List(ctx, metav1.ListOptions{})
					return err == nil, nil
				}
			}
			return false, nil
		})
	}
}

// poll waits for cond, failing the test after pollTimeout.
func poll(t testing.TB, what string, cond wait.ConditionWithContextFunc) {
	t.Helper()
	var last error
	err := wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, pollTimeout, true,
		func(ctx context.Context) (bool, error) {
			ok, err := cond(ctx)
			if err != nil {
				last = err // transient: keep polling, report the last one
			}
			return ok, nil
		})
	if err != nil {
		t.Fatalf("timed out waiting for %s (last error: %v)", what, last)
	}
}

// waitForEvent waits for an Event with reason on the named object whose
// message contains substr, and returns it.
func (e *env) waitForEvent(t *testing.T, kind, name, reason, substr string) *corev1.Event {
	t.Helper()
	var found *corev1.Event
	sel := fields.Set{"involvedObject.kind": kind, "involvedObject.name": name, "reason": reason}.AsSelector().String()
	poll(t, kind+" "+name+" Event "+reason, func(ctx context.Context) (bool, error) {
		evs, err := e.cp.Client.CoreV1().Events("").List(ctx, metav1.ListOptions{FieldSelector: sel})
		if err != nil {
			return false, err
		}
		for i := range evs.Items {
			if strings.Contains(evs.Items[i].Message, substr) {
				found = &evs.Items[i]
				return true, nil
			}
		}
		return false, nil
	})
	return found
}

// diskState is a valid NodeDiskState for a node, as a watcher writes it.
func diskState(node string) *unstructured.Unstructured {
	u, err := v1alpha1.ToUnstructured(&v1alpha1.NodeDiskState{ObjectMeta: metav1.ObjectMeta{Name: node},
		Spec: v1alpha1.NodeDiskStateSpec{NodeName: node, Digest: strings.Repeat("ab", 32),
			Reason: v1alpha1.ReasonChanged, ObservedTime: metav1.Now()}})
	if err != nil {
		panic(err)
	}
	return u
}

// notify creates or updates a node's NodeDiskState as its watcher would,
// which asks the master for one discovery run.
func (e *env) notify(t *testing.T, node string) {
	t.Helper()
	ri := e.dyn.Resource(v1alpha1.SchemeGroupVersionResource)
	u := diskState(node)
	old, err := ri.Get(t.Context(), node, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		_, err = ri.Create(t.Context(), u, metav1.CreateOptions{})
	case err == nil:
		u.SetResourceVersion(old.GetResourceVersion())
		_, err = ri.Update(t.Context(), u, metav1.UpdateOptions{})
	}
	if err != nil {
		t.Fatalf("writing NodeDiskState %s: %v", node, err)
	}
}
