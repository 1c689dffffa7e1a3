//go:build e2e

package e2e

import (
	"context"
	"sync"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"

	"github.com/nodeplug/localpv-api/localpv/v1alpha1"
	"github.com/nodeplug/nodeplug/pkg/localpv/jobs"
	"github.com/nodeplug/nodeplug/test/e2e/framework"
)

// Stages of the way from a new mount to an Available PV, in order, as the
// tracer sees them through watches.
const (
	stageNotified  = "notified"  // the watcher updated the node's NodeDiskState
	stageJob       = "job"       // the master created a discovery Job
	stagePod       = "pod"       // the Job controller created its pod
	stageScheduled = "scheduled" // the pod was bound to the node
	stageRunning   = "running"   // the kubelet reported it Running
	stageExited    = "exited"    // the kubelet reported every container terminated
	stageSucceeded = "succeeded" // the kubelet reported it Succeeded
	stagePV        = "pv"        // the master created the PV
	stageAvailable = "available" // the PV controller made it Available
)

var lpvStages = []string{stageNotified, stageJob, stagePod, stageScheduled, stageRunning, stageExited, stageSucceeded, stagePV, stageAvailable}

// lpvTracer timestamps, on arrival of watch events, each stage of the
// provisioner's pipeline, so that a latency is not rounded up to a polling
// period and can be split into its parts.
type lpvTracer struct {
	mu sync.Mutex
	// seen are the stage times in arrival order.
	seen []stageTime
	// available are the times PVs became Available, by local path.
	available map[string]time.Time
	// podAdded are the creation times of discovery pods, by UID.
	podAdded map[types.UID]time.Time
	cond     *sync.Cond
}

type stageTime struct {
	stage string
	at    time.Time
	// pod is the discovery pod a pod stage belongs to.
	pod types.UID
}

func newLPVTracer(ctx context.Context, t testing.TB, c *framework.Cluster) *lpvTracer {
	t.Helper()
	tr := &lpvTracer{available: map[string]time.Time{}, podAdded: map[types.UID]time.Time{}}
	tr.cond = sync.NewCond(&tr.mu)
	dyn, err := dynamic.NewForConfig(c.Config)
	if err != nil {
		t.Fatal(err)
	}
	watches := []func() (watch.Interface, error){
		func() (watch.Interface, error) {
			return dyn.Resource(v1alpha1.SchemeGroupVersionResource).Watch(ctx, metav1.ListOptions{})
		},
		func() (watch.Interface, error) {
			return c.Client.BatchV1().Jobs(lpvNamespace).Watch(ctx, metav1.ListOptions{})
		},
		func() (watch.Interface, error) {
			return c.Client.CoreV1().Pods(lpvNamespace).Watch(ctx, metav1.ListOptions{})
		},
		func() (watch.Interface, error) {
			return c.Client.CoreV1().PersistentVolumes().Watch(ctx, metav1.ListOptions{LabelSelector: lpvManagedBy})
		},
	}
	for _, start := range watches {
		w, err := start()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(w.Stop)
		go tr.consume(w)
	}
	return tr
}

func (tr *lpvTracer) consume(w watch.Interface) {
	for ev := range w.ResultChan() {
		now := time.Now()
		if ev.Type == watch.Bookmark || ev.Type == watch.Error {
			continue
		}
		tr.mu.Lock()
		tr.record(ev, now)
		tr.cond.Broadcast()
		tr.mu.Unlock()
	}
}

func (tr *lpvTracer) record(ev watch.Event, now time.Time) {
	add := func(stage string) { tr.seen = append(tr.seen, stageTime{stage: stage, at: now}) }
	switch o := ev.Object.(type) {
	case *batchv1.Job:
		if ev.Type == watch.Added && o.Labels[jobs.LabelRole] == jobs.RoleDiscovery {
			add(stageJob)
		}
	case *corev1.Pod:
		if o.Labels[jobs.LabelRole] != jobs.RoleDiscovery || ev.Type == watch.Deleted {
			return
		}
		stage := stagePod
		switch {
		case ev.Type == watch.Added:
			tr.podAdded[o.UID] = now
		case o.Status.Phase == corev1.PodSucceeded:
			stage = stageSucceeded
		case allTerminated(o):
			stage = stageExited
		case o.Status.Phase == corev1.PodRunning:
			stage = stageRunning
		case o.Spec.NodeName != "":
			stage = stageScheduled
		default:
			return
		}
		tr.seen = append(tr.seen, stageTime{stage: stage, at: now, pod: o.UID})
	case *corev1.PersistentVolume:
		if o.Spec.Local == nil {
			return
		}
		if ev.Type == watch.Added {
			add(stagePV)
		}
		if _, ok := tr.available[o.Spec.Local.Path]; !ok && o.Status.Phase == corev1.VolumeAvailable {
			tr.available[o.Spec.Local.Path] = now
			add(stageAvailable)
		}
	default: // a NodeDiskState
		if ev.Type != watch.Deleted {
			add(stageNotified)
		}
	}
}

// waitAvailable returns when the PV of hostPath was first seen Available.
func (tr *lpvTracer) waitAvailable(t testing.TB, hostPath string, timeout time.Duration) time.Time {
	t.Helper()
	timer := time.AfterFunc(timeout, func() { tr.mu.Lock(); tr.cond.Broadcast(); tr.mu.Unlock() })
	defer timer.Stop()
	deadline := time.Now().Add(timeout)
	tr.mu.Lock()
	defer tr.mu.Unlock()
	for {
		if at, ok := tr.available[hostPath]; ok {
			return at
		}
		if time.Now().After(deadline) {
			t.Fatalf("no Available PV for %s within %v", hostPath, timeout)
		}
		tr.cond.Wait()
	}
}

// stagesSince returns, for each stage, the time from start to its first
// occurrence at or after start, if any. Pod stages count only for pods
// created after start.
func (tr *lpvTracer) stagesSince(start time.Time) map[string]time.Duration {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	out := map[string]time.Duration{}
	for _, s := range tr.seen {
		if s.pod != "" && tr.podAdded[s.pod].Before(start) {
			continue
		}
		if _, ok := out[s.stage]; !ok && !s.at.Before(start) {
			out[s.stage] = s.at.Sub(start)
		}
	}
	return out
}

func allTerminated(pod *corev1.Pod) bool {
	if len(pod.Status.ContainerStatuses) != len(pod.Spec.Containers) {
		return false
	}
	for _, s := range pod.Status.ContainerStatuses {
		if s.State.Terminated == nil {
			return false
		}
	}
	return true
}
