package controller

import (
	"context"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2/ktesting"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/nodeplug/nodeplug/pkg/localpv/jobs"
	"github.com/nodeplug/nodeplug/pkg/localpv/naming"
)

// fakeInformer is an informer whose sync the test decides.
type fakeInformer struct {
	cache.SharedIndexInformer
	synced  bool
	handler cache.WatchErrorHandlerWithContext
}

func (i *fakeInformer) HasSynced() bool { return i.synced }

func (i *fakeInformer) SetWatchErrorHandlerWithContext(h cache.WatchErrorHandlerWithContext) error {
	i.handler = h
	return nil
}

// TestCacheSyncReportsCachesThatDoNotSync: a cache that has not synced
// after the timeout keeps the master not ready, with an error naming the
// resource, the verbs and the last list error, logged once per cache; it
// becomes ready when the cache syncs.
func TestCacheSyncReportsCachesThatDoNotSync(t *testing.T) {
	logger := ktesting.NewLogger(t, ktesting.NewConfig(ktesting.BufferLogs(true)))
	logs := func() string { return logger.GetSink().(ktesting.Underlier).GetBuffer().String() }
	nodes, policies := &fakeInformer{synced: true}, &fakeInformer{}
	const vap = "validatingadmissionpolicies.admissionregistration.k8s.io named p"
	clk := testingclock.NewFakeClock(start)
	s := newCacheSync([]informerCache{{"nodes", nodes}, {vap, policies}}, time.Minute, clk)
	forbidden := apierrors.NewForbidden(schema.GroupResource{Group: "admissionregistration.k8s.io", Resource: "validatingadmissionpolicies"}, "",
		context.DeadlineExceeded)
	r := cache.NewReflector(&cache.ListWatch{}, &v1.Pod{}, cache.NewStore(cache.MetaNamespaceKeyFunc), 0)
	policies.handler(t.Context(), r, forbidden)

	steps := []struct {
		name      string
		step      time.Duration
		synced    bool
		wantReady []string // substrings of Ready's error; none: ready
		wantLogs  int
	}{
		{name: "within the timeout", step: 59 * time.Second, wantReady: []string{"informer caches syncing: " + vap}},
		{name: "after the timeout", step: time.Second, wantReady: []string{"cache of " + vap + " not synced after 1m0s",
			"the master needs list/watch " + vap, "forbidden"}, wantLogs: 1},
		{name: "still not synced, logged once", step: time.Minute, wantReady: []string{"list/watch " + vap}, wantLogs: 1},
		{name: "synced at last", step: time.Second, synced: true, wantLogs: 1},
	}
	s.start = clk.Now()
	for _, st := range steps {
		clk.Step(st.step)
		policies.synced = st.synced
		if done := s.check(logger); done != st.synced {
			t.Fatalf("%s: check = %v, want %v", st.name, done, st.synced)
		}
		err := s.ready()
		if len(st.wantReady) == 0 && err != nil {
			t.Errorf("%s: not ready: %v", st.name, err)
		}
		for _, w := range st.wantReady {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("%s: ready error %v lacks %q", st.name, err, w)
			}
		}
		if err != nil && strings.Contains(err.Error(), "nodes") {
			t.Errorf("%s: a synced cache is reported: %v", st.name, err)
		}
		if n := strings.Count(logs(), "Informer cache not synced"); n != st.wantLogs {
			t.Errorf("%s: %d log entries, want %d:\n%s", st.name, n, st.wantLogs, logs())
		}
	}
	if !strings.Contains(logs(), `resource="`+vap+`"`) {
		t.Errorf("the log names no resource:\n%s", logs())
	}
}

// TestWarnNeedsNoAdmissionPolicy: under Warn the master neither waits for
// nor touches the admission policy; a replaced machine's PV is still kept
// and marked.
func TestWarnNeedsNoAdmissionPolicy(t *testing.T) {
	f := newFixtureWith(t, func(o *Options, inf *Informers) {
		o.ReplacedMachinePolicy = ReplacedMachineWarn
		inf.AdmissionPolicies = nil
	}, nil, machineNode("a", "m1", "u1"), newClass("fast", v1.PersistentVolumeReclaimDelete))
	for _, c := range f.c.caches.caches {
		if strings.Contains(c.resource, "admission") {
			t.Errorf("the master waits for %s", c.resource)
		}
	}
	f.discover("a", fsReport("a", "vol1"))
	old := naming.PVNameForID(naming.MachineVolumeID("a", vol1, "m1", "u1"))
	f.setPhase(old, v1.VolumeBound, true)
	f.setMachine("a", "m2", "u2")
	f.sync(nodeKey("a"))
	f.sync(blockedClaimsKey)
	if pv := f.pv(old); pv == nil || pv.Labels[jobs.LabelMachineReplaced] != "true" {
		t.Errorf("the replaced machine's PV is not kept and marked: %v", pv)
	}
	for _, a := range f.kube.Actions() {
		if a.GetResource().Resource == "validatingadmissionpolicies" {
			t.Errorf("the master used the admission policy: %s", a.GetVerb())
		}
	}
	if p := f.policyClaims(); len(p) != 0 {
		t.Errorf("blocked claims %v under Warn", p)
	}
}

func TestBlockPodsNeedsThePolicyInformer(t *testing.T) {
	f := newFixture(t, nil)
	inf := f.inf
	inf.AdmissionPolicies = nil
	_, err := newController(t.Context(), f.kube, inf, f.recorder, f.c.opts)
	if err == nil || !strings.Contains(err.Error(), "needs an informer on admission policies") {
		t.Errorf("error = %v, want one naming the missing informer", err)
	}
}
