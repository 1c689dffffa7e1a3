package mountpod

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
)

const (
	ns    = "kube-mount"
	node  = "node-a"
	local = "kubernetes.io/local-volume"
)

type podOpt func(*v1.Pod)

func inNS(n string) podOpt        { return func(p *v1.Pod) { p.Namespace = n } }
func onNode(n string) podOpt      { return func(p *v1.Pod) { p.Spec.NodeName = n } }
func phase(ph v1.PodPhase) podOpt { return func(p *v1.Pod) { p.Status.Phase = ph } }
func notReady() podOpt            { return func(p *v1.Pod) { p.Status.Conditions[0].Status = v1.ConditionFalse } }
func created(sec int64) podOpt    { return func(p *v1.Pod) { p.CreationTimestamp = metav1.Unix(sec, 0) } }
func label(k, v string) podOpt    { return func(p *v1.Pod) { p.Labels[k] = v } }
func annotate(k, v string) podOpt { return func(p *v1.Pod) { p.Annotations = map[string]string{k: v} } }
func deleting() podOpt            { return func(p *v1.Pod) { now := metav1.Now(); p.DeletionTimestamp = &now } }
func containerDown(n int) podOpt {
	return func(p *v1.Pod) { p.Status.ContainerStatuses[n].State = v1.ContainerState{} }
}

func mountPod(name string, opts ...podOpt) *v1.Pod {
	p := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, UID: types.UID("uid-" + name),
			Labels: map[string]string{"mount.kubernetes.io/local-volume": "true"}, CreationTimestamp: metav1.Unix(100, 0)},
		Spec: v1.PodSpec{NodeName: node, Containers: []v1.Container{{Name: "utilities"}, {Name: "sidecar"}}},
		Status: v1.PodStatus{Phase: v1.PodRunning,
			Conditions: []v1.PodCondition{{Type: v1.PodReady, Status: v1.ConditionTrue}},
			ContainerStatuses: []v1.ContainerStatus{
				{Name: "utilities", ContainerID: "containerd://c-" + name, State: v1.ContainerState{Running: &v1.ContainerStateRunning{}}},
				{Name: "sidecar", ContainerID: "containerd://s-" + name, State: v1.ContainerState{Running: &v1.ContainerStateRunning{}}},
			}},
	}
	for _, o := range opts {
		o(p)
	}
	return p
}

func finderWith(t testing.TB, pods ...*v1.Pod) *InformerFinder {
	t.Helper()
	idx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, Indexers())
	for _, p := range pods {
		if err := idx.Add(p); err != nil {
			t.Fatal(err)
		}
	}
	return NewFinderFromIndexer(ns, node, idx)
}

func TestFind(t *testing.T) {
	cases := map[string]struct {
		pods      []*v1.Pod
		plugin    string
		want      string // container ID, "" for NoPodError
		wantError string
	}{
		"one pod":                 {pods: []*v1.Pod{mountPod("a")}, plugin: local, want: "c-a"},
		"no pod":                  {plugin: local},
		"not ready":               {pods: []*v1.Pod{mountPod("a", notReady())}, plugin: local},
		"pending":                 {pods: []*v1.Pod{mountPod("a", phase(v1.PodPending))}, plugin: local},
		"being deleted":           {pods: []*v1.Pod{mountPod("a", deleting())}, plugin: local},
		"other node":              {pods: []*v1.Pod{mountPod("a", onNode("node-b"))}, plugin: local},
		"other namespace":         {pods: []*v1.Pod{mountPod("a", inNS("default"))}, plugin: local},
		"label false":             {pods: []*v1.Pod{mountPod("a", label("mount.kubernetes.io/local-volume", "false"))}, plugin: local},
		"other plugin's label":    {pods: []*v1.Pod{mountPod("a")}, plugin: "kubernetes.io/nfs"},
		"oldest of several":       {pods: []*v1.Pod{mountPod("b", created(50)), mountPod("a", created(60)), mountPod("c", created(40), notReady())}, plugin: local, want: "c-b"},
		"same age: first by name": {pods: []*v1.Pod{mountPod("b"), mountPod("a")}, plugin: local, want: "c-a"},
		"annotated container":     {pods: []*v1.Pod{mountPod("a", annotate(ContainerAnnotation, "sidecar"))}, plugin: local, want: "s-a"},
		"annotated missing":       {pods: []*v1.Pod{mountPod("a", annotate(ContainerAnnotation, "nope"))}, plugin: local, wantError: `no container "nope"`},
		"container not running":   {pods: []*v1.Pod{mountPod("a", containerDown(0))}, plugin: local, wantError: "not running"},
		"flex driver": {pods: []*v1.Pod{mountPod("a", label("flexvolume.mount.kubernetes.io/nodeplug.io_2ffuse", "true"))},
			plugin: "nodeplug.io/fuse", want: "c-a"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := finderWith(t, tc.pods...).Find(tc.plugin)
			switch {
			case tc.wantError != "":
				if err == nil || !strings.Contains(err.Error(), tc.wantError) {
					t.Fatalf("err %v, want %q", err, tc.wantError)
				}
			case tc.want == "":
				if _, ok := errors.AsType[*NoPodError](err); !ok {
					t.Fatalf("got %+v, %v; want NoPodError", got, err)
				}
				key, _ := LabelKey(tc.plugin)
				if !strings.Contains(err.Error(), key+"=true") || !strings.Contains(err.Error(), ns) {
					t.Fatalf("error %q does not name the label %s=true and namespace", err, key)
				}
			case err != nil || got.ContainerID != tc.want:
				t.Fatalf("got %+v, %v; want container %s", got, err, tc.want)
			}
		})
	}
}

func TestServed(t *testing.T) {
	f := finderWith(t,
		mountPod("a", label("flexvolume.mount.kubernetes.io/nodeplug.io_2ffuse", "true")),
		mountPod("b", onNode("other"), label("flexvolume.mount.kubernetes.io/x", "true")),
		mountPod("c", label("flexvolume.mount.kubernetes.io/bad_zz", "true")),
		mountPod("d", notReady(), label("flexvolume.mount.kubernetes.io/lvm", "true")),
		mountPod("e", deleting(), label("flexvolume.mount.kubernetes.io/gone", "true")))
	got := f.Served()
	if len(got) != 2 || got["nodeplug.io/fuse"].Name != "a" || got[local].Name != "a" {
		t.Fatalf("Served() = %+v; want fuse and local from a, nothing from the not Ready d or the deleted e", got)
	}
	for uid, want := range map[types.UID]bool{"uid-a": true, "uid-d": true, "uid-e": false, "uid-none": false} {
		if f.Runs(uid) != want {
			t.Errorf("Runs(%s) = %v, want %v", uid, !want, want)
		}
	}
}

// TestClusterFinder: with no node (the controller-manager), pods on any
// node serve; the preferred node's pod wins when it qualifies.
func TestClusterFinder(t *testing.T) {
	idx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, Indexers())
	for _, p := range []*v1.Pod{
		mountPod("old-b", onNode("node-b"), created(10)),
		mountPod("new-a", onNode("node-a"), created(20)),
		mountPod("c-unready", onNode("node-c"), created(1), notReady()),
		mountPod("unscheduled", onNode(""), created(0)),
	} {
		if err := idx.Add(p); err != nil {
			t.Fatal(err)
		}
	}
	f := NewFinderFromIndexer(ns, "", idx)
	cases := map[string]struct{ prefer, want string }{
		"no preference: oldest qualifying":      {"", "old-b"},
		"preferred node serves":                 {"node-a", "new-a"},
		"preferred node's pod not Ready":        {"node-c", "old-b"},
		"preferred node without a pod: any one": {"node-x", "old-b"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := f.FindPreferring(local, tc.prefer)
			if err != nil || got.Name != tc.want {
				t.Fatalf("got %+v, %v; want %s", got, err, tc.want)
			}
		})
	}
	empty := NewFinderFromIndexer(ns, "", cache.NewIndexer(cache.MetaNamespaceKeyFunc, Indexers()))
	if _, err := empty.Find(local); err == nil || !strings.Contains(err.Error(), "on any node") {
		t.Fatalf("err %v", err)
	}
}

func TestNotSynced(t *testing.T) {
	f := NewFinder(ns, node)
	if _, err := f.Find(local); !errors.Is(err, ErrNotSynced) {
		t.Fatalf("err %v, want ErrNotSynced", err)
	}
	if len(f.Served()) != 0 {
		t.Fatal("Served before sync")
	}
}

// TestInformerFinder: the informer path, with a clientset that also returns
// pods of other nodes (the fake ignores field selectors): they are never
// used.
func TestInformerFinder(t *testing.T) {
	client := fake.NewClientset(mountPod("other", onNode("node-b"), created(1)), mountPod("mine", created(2)))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f := NewFinder(ns, node)
	if err := f.Start(ctx, client); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for !f.ready() && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	got, err := f.Find(local)
	if err != nil || got.Name != "mine" {
		t.Fatalf("Find = %+v, %v", got, err)
	}
	calls := len(client.Actions())
	for range 100 {
		if _, err := f.Find(local); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(client.Actions()) - calls; n != 0 {
		t.Fatalf("Find made %d API calls", n)
	}
}

// BenchmarkFind: one lookup from the informer cache among 1,000 and
// 10,000 pods of which 3 carry the label. No API call is possible: the
// finder has only the indexer. The cost does not grow with the pods.
func BenchmarkFind(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("pods=%d", n), func(b *testing.B) { benchFind(b, n) })
	}
}

func benchFind(b *testing.B, n int) {
	var pods []*v1.Pod
	for i := range n {
		p := mountPod(fmt.Sprintf("p%04d", i))
		if i >= 3 {
			p.Labels = map[string]string{"app": "other"}
		}
		pods = append(pods, p)
	}
	f := finderWith(b, pods...)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := f.Find(local); err != nil {
			b.Fatal(err)
		}
	}
}
