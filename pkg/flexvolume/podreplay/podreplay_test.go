package podreplay

import (
	"context"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
)

func pod(name, node string, deleting bool) *v1.Pod {
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"}, Spec: v1.PodSpec{NodeName: node}}
	if deleting {
		now := metav1.Now()
		p.DeletionTimestamp = &now
	}
	return p
}

func TestReplay(t *testing.T) {
	factory := informers.NewSharedInformerFactory(fake.NewClientset(), 0)
	r := New(factory.Core().V1().Pods())
	store := r.informer.Informer().GetStore()
	for _, p := range []*v1.Pod{pod("a", "n1", false), pod("b", "n1", false), pod("unscheduled", "", false), pod("gone", "n1", true)} {
		if err := store.Add(p); err != nil {
			t.Fatal(err)
		}
	}
	var updates []string
	// The controller registers its handler through the wrapped informer,
	// as upstream's attach/detach controller does.
	_, err := r.PodInformer().Informer().AddEventHandlerWithOptions(cache.ResourceEventHandlerFuncs{
		UpdateFunc: func(old, cur any) {
			if old != cur {
				t.Errorf("replayed update with different objects")
			}
			updates = append(updates, cur.(*v1.Pod).Name)
		},
	}, cache.HandlerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n := r.Replay(context.Background(), func(p *v1.Pod) bool { return p.Name != "b" })
	if n != 1 || len(updates) != 1 || updates[0] != "a" {
		t.Fatalf("replayed %d: %v; want only a (b unmatched, unscheduled and deleting pods skipped)", n, updates)
	}
	if r.PodInformer().Lister() == nil {
		t.Fatal("no lister")
	}
}

func TestReplayWithoutHandlers(t *testing.T) {
	factory := informers.NewSharedInformerFactory(fake.NewClientset(), 0)
	r := New(factory.Core().V1().Pods())
	if n := r.Replay(context.Background(), func(*v1.Pod) bool { return true }); n != 0 {
		t.Fatalf("replayed %d", n)
	}
}
