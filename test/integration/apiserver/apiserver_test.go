package apiserver

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/nodeplug/nodeplug/test/integration/framework"
)

// TestFrameworkCreateAndWatch proves the framework's control plane is real:
// objects are stored in etcd, and a watch started from the list's
// resourceVersion sees a later create, update and delete in order.
func TestFrameworkCreateAndWatch(t *testing.T) {
	ctx := t.Context()
	cp := framework.StartAPIServer(t)
	cms := cp.Client.CoreV1().ConfigMaps("default")

	list, err := cms.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("list: %v", err)
	}
	w, err := cms.Watch(ctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion})
	if err != nil {
		t.Fatalf("watch: %v", err)
	}
	defer w.Stop()

	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "probe"}, Data: map[string]string{"v": "1"}}
	if cm, err = cms.Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create: %v", err)
	}
	cm.Data["v"] = "2"
	if _, err = cms.Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("update: %v", err)
	}
	if err = cms.Delete(ctx, "probe", metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete: %v", err)
	}
	want := []watch.EventType{watch.Added, watch.Modified, watch.Deleted}
	for i, typ := range want {
		select {
		case ev := <-w.ResultChan():
			got := ev.Object.(*corev1.ConfigMap)
			if ev.Type != typ || got.Name != "probe" {
				t.Fatalf("event %d: got %s %s, want %s probe", i, ev.Type, got.Name, typ)
			}
			if typ == watch.Modified && got.Data["v"] != "2" {
				t.Fatalf("modified event carries v=%q, want 2", got.Data["v"])
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("no %s event within 30 s", typ)
		}
	}
}
