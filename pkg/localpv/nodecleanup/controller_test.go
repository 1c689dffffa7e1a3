package nodecleanup

import (
	"slices"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	core "k8s.io/client-go/testing"
	"k8s.io/component-base/metrics/testutil"
	"k8s.io/klog/v2/ktesting"
	"k8s.io/utils/ptr"

	"github.com/nodeplug/nodeplug/pkg/localpv/jobs"
	"github.com/nodeplug/nodeplug/pkg/localpv/metrics"
)

// cluster is node a with a StatefulSet pod web-0 whose claim data-web-0 is
// bound to pv-fast (its class releases claims after 10 minutes), and a pod
// db-0 whose claim data-db-0 is bound to pv-slow (its class never does).
func cluster() []runtime.Object {
	return []runtime.Object{node("a", "m1", "u1"),
		boundPV("pv-fast", "fast", "data-web-0"), claim("data-web-0", "pv-fast"), pod("web-0", "data-web-0"),
		boundPV("pv-slow", "slow", "data-db-0"), claim("data-db-0", "pv-slow"), pod("db-0", "data-db-0")}
}

func TestNodeDeletedClaimReleasedAfterDelay(t *testing.T) {
	f := newFixture(t, classes, cluster()...)
	before := counter(t)
	f.deleteNode("a")
	f.sync("a")
	f.clock.Step(delay - time.Second)
	f.sync("a")
	if !f.claimExists("data-web-0") || f.pv("pv-fast") == nil || len(f.deletes()) > 0 {
		t.Fatalf("released before the delay: deletes %v", f.deletes())
	}

	f.clock.Step(time.Second)
	f.sync("a")
	if f.claimExists("data-web-0") || f.pv("pv-fast") != nil {
		t.Fatalf("claim or PV of the opted-in class left after the delay: deletes %v", f.deletes())
	}
	if !f.claimExists("data-db-0") || f.pv("pv-slow") == nil {
		t.Fatal("the claim of a class that does not release claims was touched")
	}
	if got := counter(t) - before; got != 1 {
		t.Errorf("claims_released_total grew by %v, want 1", got)
	}
	var marked, claimDeleted, pvUnprotected, pvDeleted int
	for i, a := range f.kube.Actions() {
		switch a.GetVerb() {
		case "create":
			t.Errorf("created %s: nothing may be created (no cleanup Job)", a.GetResource().Resource)
		case "update":
			if pv, ok := a.(core.UpdateAction).GetObject().(*v1.PersistentVolume); ok {
				if pv.Annotations[jobs.AnnNodeGone] == start.Format(time.RFC3339) && marked == 0 {
					marked = i
				}
				if !slices.Contains(pv.Finalizers, jobs.FinalizerPVProtection) {
					pvUnprotected = i
				}
			}
		case "delete":
			d := a.(core.DeleteAction)
			if d.GetResource().Resource == "nodes" {
				continue // the test's
			}
			pre := d.GetDeleteOptions().Preconditions
			want := types.UID("uid-" + d.GetName())
			if pre == nil || pre.UID == nil || *pre.UID != want {
				t.Errorf("delete of %s %s without the UID precondition %s", d.GetResource().Resource, d.GetName(), want)
			}
			if d.GetResource().Resource == "persistentvolumeclaims" {
				claimDeleted = i
			} else {
				pvDeleted = i
			}
		}
	}
	if !(marked > 0 && marked < claimDeleted && claimDeleted < pvUnprotected && pvUnprotected < pvDeleted) {
		t.Errorf("order of mark %d, claim delete %d, finalizer removal %d, PV delete %d: want increasing", marked, claimDeleted,
			pvUnprotected, pvDeleted)
	}
	evs := f.events()
	for _, want := range [][]string{
		{"Warning", ReasonNodeDeleted, "PV pv-fast is on node a, deleted at 2026-01-01T12:00:00Z"},
		{"Warning", ReasonNodeDeleted, "Claim data-web-0: PV pv-fast"},
		{"Warning", ReasonNodeDeleted, "claim default/data-web-0 released, PV deleted without a wipe"},
	} {
		if !hasEvent(evs, want...) {
			t.Errorf("no Event with %q in %q", want, evs)
		}
	}
	if hasEvent(evs, "data-db-0") {
		t.Errorf("an Event about the claim of a class that does not release claims: %q", evs)
	}
}

func counter(t *testing.T) float64 {
	t.Helper()
	metrics.Register()
	v, err := testutil.GetCounterMetricValue(metrics.ClaimsReleased.WithLabelValues(metrics.ReasonNodeDeleted))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestRetainPVKept: the claim of a Retain PV is released, and the PV is kept
// as its policy asks, once.
func TestRetainPVKept(t *testing.T) {
	objs := cluster()
	objs[1].(*v1.PersistentVolume).Spec.PersistentVolumeReclaimPolicy = v1.PersistentVolumeReclaimRetain
	f := newFixture(t, classes, objs...)
	f.deleteNode("a")
	f.clock.Step(delay)
	f.sync("a")
	if f.claimExists("data-web-0") {
		t.Fatal("the claim of a Retain PV was not released")
	}
	if d := f.deletes(); !slices.Equal(d, []string{"persistentvolumeclaims data-web-0"}) {
		t.Fatalf("deleted %v, want the claim only", d)
	}
	if pv := f.pv("pv-fast"); !marked(pv) || !slices.Contains(pv.Finalizers, jobs.FinalizerPVProtection) {
		t.Fatalf("the Retain PV was not kept as it was, marked: %v", pv)
	}
	if evs := f.events(); !hasEvent(evs, "Warning", ReasonNodeDeleted, "the PV is kept, as its reclaim policy Retain asks") {
		t.Errorf("no Event that the PV is kept in %q", evs)
	}
	setPV(f, func(pv *v1.PersistentVolume) { pv.Status.Phase = v1.VolumeReleased })
	f.sync("a")
	if d, evs := f.deletes(), f.events(); len(d) != 1 || len(evs) > 0 {
		t.Errorf("the released Retain PV was handled again: deletes %v, Events %q", d, evs)
	}
}

// TestClaimsKept: nothing is deleted or marked unless the Node is gone for
// the whole delay and the claim and its binding are older than the deletion.
func TestClaimsKept(t *testing.T) {
	tests := []struct {
		name string
		// change runs after the fixture is built and before the Node is
		// deleted; during runs once the Node is deleted, before the delay
		// ends.
		change, during func(f *fixture)
		wantEvent      string
	}{
		{name: "node back before the delay", during: func(f *fixture) { f.createNode(node("a", "m2", "u2"), true) }},
		{name: "node back, cache behind", during: func(f *fixture) { f.createNode(node("a", "m1", "u1"), false) }},
		{name: "claim created after the deletion", change: func(f *fixture) {
			setClaim(f, func(c *v1.PersistentVolumeClaim) { c.CreationTimestamp = metav1.NewTime(start.Add(time.Second)) })
		}, wantEvent: "it was created at 2026-01-01T12:00:01Z, after the node was gone"},
		{name: "claim created in the second of the deletion", change: func(f *fixture) {
			setClaim(f, func(c *v1.PersistentVolumeClaim) { c.CreationTimestamp = metav1.NewTime(start) })
		}, wantEvent: "it was created at 2026-01-01T12:00:00Z"},
		{name: "claim bound after the deletion", change: func(f *fixture) {
			setPV(f, func(pv *v1.PersistentVolume) {
				pv.Status.LastPhaseTransitionTime = ptr.To(metav1.NewTime(start.Add(2 * time.Second)))
			})
		}, wantEvent: "it was bound at 2026-01-01T12:00:02Z, after the node was gone"},
		{name: "claim of the same name is another one", change: func(f *fixture) {
			setClaim(f, func(c *v1.PersistentVolumeClaim) { c.UID = "uid-recreated" })
		}},
		{name: "claim bound to another volume", change: func(f *fixture) {
			setClaim(f, func(c *v1.PersistentVolumeClaim) { c.Spec.VolumeName = "pv-other" })
		}},
		{name: "class does not release claims", change: func(f *fixture) {
			setPV(f, func(pv *v1.PersistentVolume) { pv.Annotations[jobs.AnnClass] = "slow" })
		}},
		{name: "class not configured", change: func(f *fixture) {
			setPV(f, func(pv *v1.PersistentVolume) { pv.Annotations[jobs.AnnClass] = "gone" })
		}},
		{name: "PV not managed by the master", change: func(f *fixture) {
			setPV(f, func(pv *v1.PersistentVolume) { delete(pv.Labels, jobs.LabelManagedBy) })
		}},
		{name: "PV released", change: func(f *fixture) {
			setPV(f, func(pv *v1.PersistentVolume) { pv.Status.Phase = v1.VolumeReleased })
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, classes, cluster()...)
			if tc.change != nil {
				tc.change(f)
			}
			f.deleteNode("a")
			f.sync("a")
			f.clock.Step(delay / 2)
			if tc.during != nil {
				tc.during(f)
			}
			f.sync("a")
			f.clock.Step(delay)
			f.sync("a")
			if d := f.deletes(); len(d) > 0 {
				t.Fatalf("deleted %v", d)
			}
			if pv := f.pv("pv-fast"); pv == nil || marked(pv) {
				t.Fatalf("PV marked or gone: %v", pv)
			}
			evs := f.events()
			if tc.wantEvent == "" && len(evs) > 0 {
				t.Errorf("Events %q, want none", evs)
			}
			if tc.wantEvent != "" && !hasEvent(evs, "Warning", ReasonClaimKept, tc.wantEvent) {
				t.Errorf("no %s Event with %q in %q", ReasonClaimKept, tc.wantEvent, evs)
			}
			f.sync("a")
			if evs := f.events(); len(evs) > 0 {
				t.Errorf("Events repeated on the next sync: %q", evs)
			}
		})
	}
}

func setClaim(f *fixture, change func(*v1.PersistentVolumeClaim)) {
	f.t.Helper()
	c, err := f.kube.CoreV1().PersistentVolumeClaims(ns).Get(f.t.Context(), "data-web-0", metav1.GetOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	change(c)
	if _, err := f.kube.CoreV1().PersistentVolumeClaims(ns).Update(f.t.Context(), c, metav1.UpdateOptions{}); err != nil {
		f.t.Fatal(err)
	}
}

func setPV(f *fixture, change func(*v1.PersistentVolume)) {
	f.t.Helper()
	pv := f.pv("pv-fast")
	change(pv)
	if _, err := f.kube.CoreV1().PersistentVolumes().Update(f.t.Context(), pv, metav1.UpdateOptions{}); err != nil {
		f.t.Fatal(err)
	}
	f.syncStores()
}

// TestNodeBackWhileMarking: a Node that re-registers after its PVs were
// marked but before anything was deleted keeps its claims when it is the
// same machine (or says nothing of its machine), and not when another
// machine took its name.
func TestNodeBackWhileMarking(t *testing.T) {
	tests := []struct {
		name        string
		back        *v1.Node
		wantRelease bool
	}{
		{name: "same machine", back: node("a", "m1", "u1")},
		{name: "machine unknown", back: node("a", "", "")},
		{name: "another machine", back: node("a", "m2", "u2"), wantRelease: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, classes, cluster()...)
			f.deleteNode("a")
			f.clock.Step(delay)
			f.kube.PrependReactor("update", "persistentvolumes", func(a core.Action) (bool, runtime.Object, error) {
				if pv := a.(core.UpdateAction).GetObject().(*v1.PersistentVolume); marked(pv) {
					_ = f.kube.Tracker().Add(tc.back) // the client would wait for the reactor's lock
				}
				return false, nil, nil
			})
			f.sync("a")
			if released := !f.claimExists("data-web-0"); released != tc.wantRelease {
				t.Fatalf("claim released = %v, want %v", released, tc.wantRelease)
			}
			if pv := f.pv("pv-fast"); !tc.wantRelease && (pv == nil || marked(pv)) {
				t.Fatalf("PV not kept unmarked: %v", pv)
			}
			if evs := f.events(); !tc.wantRelease && !hasEvent(evs, "Normal", ReasonNodeBack, "Node a is back on the same machine") {
				t.Errorf("no %s Event in %q", ReasonNodeBack, evs)
			}
		})
	}
}

// TestRestart: a master that starts after the deletion counts the delay from
// its start, and finishes a release that an earlier master cut short at once,
// with the time that master recorded.
func TestRestart(t *testing.T) {
	t.Run("deleted while no master ran", func(t *testing.T) {
		f := newFixture(t, classes, cluster()[1:]...)
		f.sync("a")
		f.clock.Step(delay - time.Second)
		f.sync("a")
		if !f.claimExists("data-web-0") {
			t.Fatal("released before the delay counted from the start")
		}
		f.clock.Step(time.Second)
		f.sync("a")
		if f.claimExists("data-web-0") || f.pv("pv-fast") != nil {
			t.Fatal("not released after the delay counted from the start")
		}
	})
	t.Run("release cut short", func(t *testing.T) {
		objs := cluster()[1:]
		pv := objs[0].(*v1.PersistentVolume)
		earlier := start.Add(-delay)
		pv.Annotations[jobs.AnnNodeGone] = earlier.Format(time.RFC3339)
		f := newFixture(t, classes, objs...)
		f.sync("a")
		if f.claimExists("data-web-0") || f.pv("pv-fast") != nil {
			t.Fatal("a marked PV's release was not finished at once")
		}
		if evs := f.events(); !hasEvent(evs, "deleted at "+earlier.Format(time.RFC3339)) {
			t.Errorf("Events do not carry the recorded deletion time: %q", evs)
		}
	})
}

// TestNodeAddForgetsDeletion: a Node deleted, back, and deleted again counts
// its delay from the second deletion.
func TestNodeAddForgetsDeletion(t *testing.T) {
	f := newFixture(t, classes, cluster()...)
	f.deleteNode("a")
	f.clock.Step(delay / 2)
	f.createNode(node("a", "m1", "u1"), true)
	f.sync("a")
	f.deleteNode("a")
	f.clock.Step(delay - time.Second)
	f.sync("a")
	if !f.claimExists("data-web-0") {
		t.Fatal("the delay was counted from the first deletion")
	}
	f.clock.Step(time.Second)
	f.sync("a")
	if f.claimExists("data-web-0") {
		t.Fatal("not released a delay after the second deletion")
	}
}

func TestOffWithoutAClass(t *testing.T) {
	f := newFixture(t, "slow:\n  hostDir: /mnt/slow\n", cluster()...)
	_, ctx := ktesting.NewTestContext(t)
	done := make(chan struct{})
	go func() { f.c.Run(ctx); close(done) }()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatal("Run did not return at once with no class that releases claims")
	}
	if _, ok := f.factory.Core().V1().PersistentVolumes().Informer().GetIndexer().GetIndexers()[indexNode]; ok {
		t.Fatal("the PV index was added with no class that releases claims")
	}
}
