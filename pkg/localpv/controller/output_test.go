package controller

import (
	"fmt"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeplug/nodeplug/pkg/localpv/metrics"
	"github.com/nodeplug/nodeplug/pkg/localpv/naming"
	"github.com/nodeplug/nodeplug/pkg/localpv/report"
)

// TestDiscoveryPodConsumedWhenContainersExited: the kubelet reports every
// container terminated about a second before it sets the pod's phase, and
// with restartPolicy Never that is already final.
func TestDiscoveryPodConsumedWhenContainersExited(t *testing.T) {
	running := func(p *v1.Pod) { p.Status.Phase = v1.PodRunning }
	tests := []struct {
		name     string
		mutate   func(*v1.Pod)
		consumed bool
	}{
		{name: "phase Succeeded", consumed: true},
		{name: "phase Running, every container exited 0", mutate: running, consumed: true},
		{name: "phase Running, a container still running", consumed: false, mutate: func(p *v1.Pod) {
			running(p)
			p.Status.ContainerStatuses[1].State = v1.ContainerState{Running: &v1.ContainerStateRunning{}}
		}},
		{name: "phase Running, a container exited 1", consumed: false, mutate: func(p *v1.Pod) {
			running(p)
			p.Status.ContainerStatuses[0].State.Terminated.ExitCode = 1
		}},
		{name: "phase Running, a container not reported yet", consumed: false, mutate: func(p *v1.Pod) {
			running(p)
			p.Status.ContainerStatuses = p.Status.ContainerStatuses[:1]
		}},
		{name: "restartPolicy OnFailure, every container exited 0", consumed: false, mutate: func(p *v1.Pod) {
			running(p)
			p.Spec.RestartPolicy = v1.RestartPolicyOnFailure
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, nil, newNode("a", nil), newClass("fast", v1.PersistentVolumeReclaimDelete))
			f.c.requestDiscovery("a")
			f.sync(nodeKey("a"))
			name := naming.DiscoveryJobName("a")
			f.finishPodWith(name, true, tc.mutate, mustEncode(t, fsReport("a", "vol1"))...)
			f.sync(nodeKey("a"))
			if got := f.pv(naming.PVName("a", "/mnt/fast/vol1")) != nil; got != tc.consumed {
				t.Fatalf("PV created = %v, want %v", got, tc.consumed)
			}
			if got := f.job(name) == nil; got != tc.consumed {
				t.Errorf("Job deleted = %v, want %v", got, tc.consumed)
			}
		})
	}
}

// TestReportAskingForMoreShards: a node whose report does not fit in the
// pod's containers gets a new run at once with as many as it asked for, and
// keeps that number; this is neither a failure nor a rejected report.
func TestReportAskingForMoreShards(t *testing.T) {
	f := newFixture(t, nil, newNode("a", nil), newClass("fast", v1.PersistentVolumeReclaimDelete))
	name := naming.DiscoveryJobName("a")
	failures := counterValue(t, metrics.JobFailures.WithLabelValues(metrics.KindDiscovery))
	containers := func() int { return len(f.job(name).Spec.Template.Spec.Containers) }
	f.c.requestDiscovery("a")
	f.sync(nodeKey("a"))
	if got := containers(); got != 2 {
		t.Fatalf("first discovery pod has %d containers, want the configured 2", got)
	}
	ask := func(i int) string { return fmt.Sprintf("lpv1 m %d 2 0000000000000000 3", i) }
	f.finishJob(name, true, ask(0), ask(1))
	f.sync(nodeKey("a"))
	f.wantEvent("DiscoveryResharded")
	if got := counterValue(t, metrics.JobFailures.WithLabelValues(metrics.KindDiscovery)) - failures; got != 0 {
		t.Errorf("a request for more containers counted as %v Job failures", got)
	}
	_ = f.kube.CoreV1().Pods(testNS).Delete(t.Context(), name+"-pod", metav1.DeleteOptions{})
	f.syncStores()
	f.sync(nodeKey("a"))
	if f.job(name) == nil {
		t.Fatal("discovery not re-run at once")
	}
	if got := containers(); got != 3 {
		t.Fatalf("re-run has %d containers, want 3", got)
	}
	msgs, err := report.Encode(fsReport("a", "vol1"), 3)
	if err != nil {
		t.Fatal(err)
	}
	f.finishJob(name, true, msgs...)
	f.sync(nodeKey("a"))
	if f.pv(naming.PVName("a", "/mnt/fast/vol1")) == nil {
		t.Fatal("the re-run's report did not publish vol1")
	}
	_ = f.kube.CoreV1().Pods(testNS).Delete(t.Context(), name+"-pod", metav1.DeleteOptions{})
	f.syncStores()
	f.c.requestDiscovery("a")
	f.sync(nodeKey("a"))
	if got := containers(); got != 3 {
		t.Fatalf("the next run has %d containers, want the 3 the node needed", got)
	}
}
