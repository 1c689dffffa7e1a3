// Package unwipedtest gives tests a memory of unwiped disks over a fake
// dynamic client.
package unwipedtest

import (
	"context"
	"errors"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"

	"github.com/nodeplug/localpv-api/localpv/v1alpha1"

	"github.com/nodeplug/nodeplug/pkg/localpv/unwiped"
)

// ListKinds are the list kinds of the localpv.nodeplug.io resources, for
// dynamicfake.NewSimpleDynamicClientWithCustomListKinds.
func ListKinds() map[schema.GroupVersionResource]string {
	return map[schema.GroupVersionResource]string{
		v1alpha1.SchemeGroupVersionResource:      v1alpha1.ListKind,
		v1alpha1.UnwipedDiskGroupVersionResource: v1alpha1.UnwipedDiskListKind,
	}
}

// Client returns a fake dynamic client that serves NodeDiskStates and
// UnwipedDisks, holding objs (unstructured).
func Client(objs ...runtime.Object) *dynamicfake.FakeDynamicClient {
	return dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), ListKinds(), objs...)
}

// Store returns the memory of the master in namespace over dyn's
// UnwipedDisks and kube's legacy ConfigMap.
func Store(dyn *dynamicfake.FakeDynamicClient, kube kubernetes.Interface, namespace string, clk clock.PassiveClock) unwiped.Store {
	return unwiped.New(unwiped.Options{Disks: dyn.Resource(v1alpha1.UnwipedDiskGroupVersionResource), Kube: kube,
		Namespace: namespace, Provisioner: "nodeplug.io/local-volume-provisioner", Clock: clk})
}

// Object is the UnwipedDisk of d, as a master of namespace lpv remembers it
// (d.Since in the layout 2006-01-02T15:04:05Z, or empty for 2026-01-01).
func Object(d unwiped.Disk) *unstructured.Unstructured {
	since := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	if t, err := time.Parse(time.RFC3339, d.Since); err == nil {
		since = t
	}
	u, err := v1alpha1.UnwipedDiskToUnstructured(&v1alpha1.UnwipedDisk{
		ObjectMeta: metav1.ObjectMeta{Name: unwiped.Key(d.Node, d.Path, d.ID), Finalizers: []string{v1alpha1.UnwipedDiskFinalizer}},
		Spec: v1alpha1.UnwipedDiskSpec{DiskID: string(d.ID), PV: d.PV, Node: d.Node, Path: d.Path, Since: metav1.NewTime(since),
			Reason: d.Reason, Installation: v1alpha1.Installation{Namespace: "lpv"}},
	})
	if err != nil {
		panic(err) // a fixed type converts
	}
	return u
}

// CachedStore returns the memory of the master in namespace read from an
// informer on dyn's UnwipedDisks, started and synced, as a master runs it.
// With silent, the informer's watch shows nothing after its list: only
// the store's own writes reach what it reads, as when the watch lags.
func CachedStore(tb testing.TB, dyn *dynamicfake.FakeDynamicClient, kube kubernetes.Interface, namespace string,
	clk clock.PassiveClock, silent bool) unwiped.Store {
	tb.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	tb.Cleanup(cancel)
	res := dyn.Resource(v1alpha1.UnwipedDiskGroupVersionResource)
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) { return res.List(ctx, o) },
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			if silent {
				return watch.NewFake(), nil
			}
			return res.Watch(ctx, o)
		},
	}
	inf := cache.NewSharedIndexInformer(listWatch{lw}, &unstructured.Unstructured{}, 0, cache.Indexers{})
	s, err := unwiped.NewFromInformer(ctx, unwiped.Options{Disks: res, Kube: kube, Namespace: namespace,
		Provisioner: "nodeplug.io/local-volume-provisioner", Clock: clk}, inf)
	if err != nil {
		tb.Fatal(err)
	}
	go inf.RunWithContext(ctx)
	synced := func() bool {
		_, err := s.Candidates(ctx, "", "", "wwn:naa.1")
		return !errors.Is(err, unwiped.ErrNotSynced)
	}
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced, synced) {
		tb.Fatal("the UnwipedDisk cache did not sync")
	}
	return s
}

// listWatch lists and watches through a fake client, which streams no
// initial events (watch-list semantics).
type listWatch struct{ *cache.ListWatch }

func (listWatch) IsWatchListSemanticsUnSupported() bool { return true }
