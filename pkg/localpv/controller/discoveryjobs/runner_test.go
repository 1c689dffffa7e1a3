package discoveryjobs_test

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	core "k8s.io/client-go/testing"
	compmetrics "k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/testutil"

	"github.com/nodeplug/nodeplug/pkg/localpv/controller/discoveryjobs"
	"github.com/nodeplug/nodeplug/pkg/localpv/metrics"
)

func TestStart(t *testing.T) {
	tests := []struct {
		name      string
		request   bool
		refuse    error
		wantJob   bool
		wantErr   string
		wantAgain bool
	}{
		{name: "no request, no Job"},
		{name: "a request starts a Job", request: true, wantJob: true},
		{name: "a refused create is an error and the request stays", request: true, refuse: errors.New("forbidden"),
			wantErr: "failed to create discovery Job for node a", wantAgain: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, nil)
			refuse := tc.refuse
			h.kube.PrependReactor("create", "jobs", func(core.Action) (bool, runtime.Object, error) { return refuse != nil, nil, refuse })
			if tc.request {
				h.r.Request("a")
			}
			err := h.sync("a")
			if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Fatalf("Sync error = %v, want %q", err, tc.wantErr)
			}
			j := h.job("a")
			if (j != nil) != tc.wantJob {
				t.Fatalf("Job created = %t, want %t", j != nil, tc.wantJob)
			}
			if j != nil && !slices.ContainsFunc(j.Spec.Template.Spec.Containers[0].Args, func(a string) bool { return strings.Contains(a, "/dev/sdz") }) {
				t.Errorf("the Job does not resolve the node's held paths: %v", j.Spec.Template.Spec.Containers[0].Args)
			}
			if tc.wantAgain {
				refuse = nil
				if err := h.sync("a"); err != nil || h.job("a") == nil {
					t.Errorf("the kept request did not start a Job: %v", err)
				}
			}
		})
	}
}

func TestRateLimit(t *testing.T) {
	h := newHarness(t, func(c *discoveryjobs.Config) { c.QPS, c.Burst = 0.1, 1 })
	h.r.Request("a")
	h.r.Request("b")
	_ = h.sync("a")
	_ = h.sync("b")
	if h.job("b") != nil || h.requeued["b"] != 10*time.Second {
		t.Fatalf("the second node was not delayed by the limit: Job %v, requeued after %v", h.job("b") != nil, h.requeued["b"])
	}
	h.clock.Step(10 * time.Second)
	_ = h.sync("b")
	if h.job("b") == nil {
		t.Fatal("no Job after the delay")
	}
}

func TestNotice(t *testing.T) {
	h := newHarness(t, nil)
	steps := []struct {
		generation int64
		want       bool
	}{{1, true}, {1, false}, {2, true}, {0, true}, {0, true}}
	for _, s := range steps {
		if got := h.r.Notice("a", s.generation); got != s.want {
			t.Errorf("Notice(generation %d) = %t, want %t", s.generation, got, s.want)
		}
	}
	h.r.Skip("a")
	if err := h.sync("a"); err != nil || h.job("a") != nil {
		t.Errorf("a skipped node got a Job (err %v)", err)
	}
}

// consumeCase finishes the node's Job as described and checks what one
// Sync makes of it.
type consumeCase struct {
	name     string
	finished bool
	code     int32
	ranOn    string
	msgs     func(t *testing.T) []string
	// after is how long after the Job finished Sync runs.
	after        time.Duration
	consumeErr   error
	wantConsumed []string
	wantDeleted  bool
	wantErr      bool
	wantEvent    string
}

func TestConsume(t *testing.T) {
	good := func(t *testing.T) []string { return encode(t, "a", 2, "vol1") }
	tests := []consumeCase{
		{name: "a succeeded pod is consumed before the Job completes", ranOn: "a", msgs: good,
			wantConsumed: []string{"a: 1 accepted"}, wantDeleted: true},
		{name: "a completed Job is consumed", finished: true, ranOn: "a", msgs: good,
			wantConsumed: []string{"a: 1 accepted"}, wantDeleted: true},
		{name: "a running Job waits"},
		{name: "a failed Job is reported", finished: true, code: 1, ranOn: "a", msgs: func(*testing.T) []string { return []string{"no space"} },
			wantDeleted: true, wantEvent: "DiscoveryFailed Discovery Job failed: BackoffLimitExceeded: no space"},
		{name: "a completed Job waits for its pod", finished: true, wantErr: true},
		{name: "a completed Job whose pod never shows fails", finished: true, after: discoveryjobs.PodGracePeriod,
			wantDeleted: true, wantEvent: "DiscoveryFailed"},
		{name: "an undecodable report is rejected", ranOn: "a", msgs: func(*testing.T) []string { return []string{"junk", "junk"} },
			wantDeleted: true, wantEvent: "DiscoveryReportRejected"},
		{name: "a report from another node is rejected", ranOn: "b", msgs: good,
			wantDeleted: true, wantEvent: "DiscoveryReportRejected"},
		{name: "shards scanned from different states of the disks run again", ranOn: "a",
			msgs: func(t *testing.T) []string {
				return []string{encode(t, "a", 2, "vol1")[0], encode(t, "a", 2, "vol1", "vol2")[1]}
			},
			wantDeleted: true, wantEvent: "DiscoveryRetried Disks changed during discovery"},
		{name: "a consumer error keeps the Job", ranOn: "a", msgs: good, consumeErr: errors.New("apiserver down"),
			wantConsumed: []string{"a: 1 accepted"}, wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { runConsumeCase(t, tc) })
	}
}

func runConsumeCase(t *testing.T, tc consumeCase) {
	h := newHarness(t, nil)
	h.consumer.err = tc.consumeErr
	h.r.Request("a")
	_ = h.sync("a")
	var msgs []string
	if tc.msgs != nil {
		msgs = tc.msgs(t)
	}
	h.finish("a", tc.finished, tc.code, tc.ranOn, msgs...)
	h.clock.Step(tc.after)
	err := h.sync("a")
	if (err != nil) != tc.wantErr {
		t.Fatalf("Sync error = %v, want one: %t", err, tc.wantErr)
	}
	if !slices.Equal(h.consumer.got, tc.wantConsumed) {
		t.Errorf("consumed %q, want %q", h.consumer.got, tc.wantConsumed)
	}
	if deleted := h.job("a") == nil; deleted != tc.wantDeleted {
		t.Errorf("Job deleted = %t, want %t", deleted, tc.wantDeleted)
	}
	if evs := h.events(); tc.wantEvent != "" && !strings.Contains(evs, tc.wantEvent) || tc.wantEvent == "" && evs != "" {
		t.Errorf("Events %q, want %q", evs, tc.wantEvent)
	}
}

// TestConsumedOnce: a Job whose delete did not go through is not consumed
// a second time.
func TestConsumedOnce(t *testing.T) {
	h := newHarness(t, nil)
	h.kube.PrependReactor("delete", "jobs", func(core.Action) (bool, runtime.Object, error) { return true, nil, nil })
	h.r.Request("a")
	_ = h.sync("a")
	h.finish("a", true, 0, "a", encode(t, "a", 2, "vol1")...)
	_ = h.sync("a")
	_ = h.sync("a")
	if len(h.consumer.got) != 1 {
		t.Errorf("consumed %d times, want once", len(h.consumer.got))
	}
}

// TestFailedRunsBackOff: each unusable run doubles the wait before the next
// one; a usable report resets it.
func TestFailedRunsBackOff(t *testing.T) {
	h := newHarness(t, nil)
	before := counterValue(t, metrics.JobFailures.WithLabelValues(metrics.KindDiscovery))
	defer func() {
		if got := counterValue(t, metrics.JobFailures.WithLabelValues(metrics.KindDiscovery)) - before; got != 2 {
			t.Errorf("%v Job failures counted, want 2", got)
		}
	}()
	h.r.Request("a")
	for _, want := range []time.Duration{10 * time.Second, 20 * time.Second} {
		_ = h.sync("a")
		h.finish("a", true, 1, "a", "boom")
		_ = h.sync("a")
		h.dropPod("a")
		_ = h.sync("a")
		if h.job("a") != nil || h.requeued["a"] != want {
			t.Fatalf("next run not delayed by %v (requeued after %v)", want, h.requeued["a"])
		}
		h.clock.Step(want)
	}
}

// TestReportAskingForMoreShards: a node whose report does not fit in the
// pod's containers gets a new run at once with as many as it asked for, and
// keeps that number.
func TestReportAskingForMoreShards(t *testing.T) {
	h := newHarness(t, nil)
	h.r.Request("a")
	_ = h.sync("a")
	ask := []string{"lpv1 m 0 2 0000000000000000 3", "lpv1 m 1 2 0000000000000000 3"}
	h.finish("a", true, 0, "a", ask...)
	_ = h.sync("a")
	if evs := h.events(); !strings.Contains(evs, "DiscoveryResharded") {
		t.Fatalf("Events %q, want DiscoveryResharded", evs)
	}
	h.dropPod("a")
	_ = h.sync("a")
	if j := h.job("a"); j == nil || len(j.Spec.Template.Spec.Containers) != 3 {
		t.Fatalf("the re-run does not have the 3 containers asked for: %v", j)
	}
	h.finish("a", true, 0, "a", encode(t, "a", 3, "vol1")...)
	_ = h.sync("a")
	if len(h.consumer.got) != 1 || h.job("a") != nil {
		t.Fatalf("the re-run's report was not consumed: %v", h.consumer.got)
	}
	h.dropPod("a")
	h.r.Request("a")
	_ = h.sync("a")
	if j := h.job("a"); j == nil || len(j.Spec.Template.Spec.Containers) != 3 {
		t.Fatalf("the next run does not keep the 3 containers the node needed: %v", j)
	}
}

func counterValue(t *testing.T, c compmetrics.CounterMetric) float64 {
	t.Helper()
	metrics.Register()
	v, err := testutil.GetCounterMetricValue(c)
	if err != nil {
		t.Fatal(err)
	}
	return v
}
