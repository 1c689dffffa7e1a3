package localpv

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/retry"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"

	"github.com/nodeplug/nodeplug/pkg/localpv/jobs"
	"github.com/nodeplug/nodeplug/pkg/localpv/naming"
	"github.com/nodeplug/nodeplug/pkg/localpv/report"
)

// outcome is what the simulator does with a cleanup Job.
type outcome int

const (
	// hold leaves the Job pending, as if its pod were not scheduled yet or
	// still wiping; finish ends it later.
	hold outcome = iota
	succeed
	fail
)

// simItem is a Job to run, a deleted Job whose pods to collect, or a
// deleted PV whose pv-protection finalizer to remove.
type simItem struct {
	name    string
	uid     types.UID
	deleted bool
	pv      bool
}

// pvProtection is the finalizer the apiserver puts on every PV and the
// controller-manager's pv-protection controller removes.
const pvProtection = "kubernetes.io/pv-protection"

// kubeletSim stands in for what the integration control plane lacks: the
// scheduler, the kubelet, the Job controller, the garbage collector and the
// pv-protection controller. For each Job in the namespace it creates the pod
// on the node the Job is pinned to, ends its containers with termination
// messages, and then sets the Job's status as the Job controller does
// (SuccessCriteriaMet then Complete, or FailureTarget then Failed). The
// master reads exactly these fields. When a Job is deleted, its pods are
// deleted; when an unbound PV is deleted, its pv-protection finalizer is
// removed.
type kubeletSim struct {
	t      testing.TB
	client kubernetes.Interface
	queue  workqueue.TypedRateLimitingInterface[simItem]

	mu sync.Mutex
	// disks is what discovery reports on each node; nodes not listed report
	// no classes.
	disks map[string]*report.Report
	// podNode sends the pods of a node's Jobs to another node.
	podNode map[string]string
	// cleanup decides each cleanup attempt.
	cleanup func(attempt int) outcome
	// discovered lists, per node, the discovery Jobs the simulator finished.
	discovered map[string][]types.UID
}

// startSimWorkers starts a simulator that runs up to workers Jobs at once.
func startSimWorkers(t testing.TB, client kubernetes.Interface, workers int) *kubeletSim {
	t.Helper()
	s := &kubeletSim{t: t, client: client,
		queue: workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[simItem]()),
		disks: map[string]*report.Report{}, podNode: map[string]string{},
		cleanup: func(int) outcome { return succeed }, discovered: map[string][]types.UID{}}
	ctx, cancel := context.WithCancel(context.WithoutCancel(t.Context()))
	factory := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithNamespace(namespace))
	_, err := factory.Batch().V1().Jobs().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj interface{}) { s.enqueue(obj, false) },
		UpdateFunc: func(_, obj interface{}) { s.enqueue(obj, false) },
		DeleteFunc: func(obj interface{}) { s.enqueue(obj, true) },
	})
	if err != nil {
		t.Fatal(err)
	}
	cluster := informers.NewSharedInformerFactory(client, 0)
	_, err = cluster.Core().V1().PersistentVolumes().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		UpdateFunc: func(_, obj interface{}) { s.enqueuePV(obj) },
	})
	if err != nil {
		t.Fatal(err)
	}
	factory.StartWithContext(ctx)
	cluster.StartWithContext(ctx)
	var wg sync.WaitGroup
	for range max(workers, 1) {
		wg.Go(func() {
			for s.processNext(ctx) {
			}
		})
	}
	t.Cleanup(func() {
		cancel()
		s.queue.ShutDown()
		wg.Wait()
		factory.Shutdown()
		cluster.Shutdown()
	})
	return s
}

func (s *kubeletSim) setDisks(node string, r *report.Report) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.disks[node] = r
}

func (s *kubeletSim) setPodNode(jobNode, podNode string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.podNode[jobNode] = podNode
}

func (s *kubeletSim) setCleanup(f func(attempt int) outcome) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cleanup = f
}

func (s *kubeletSim) discoveries(node string) []types.UID {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]types.UID(nil), s.discovered[node]...)
}

func (s *kubeletSim) enqueue(obj interface{}, deleted bool) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	if j, ok := obj.(*batchv1.Job); ok {
		s.queue.Add(simItem{name: j.Name, uid: j.UID, deleted: deleted})
	}
}

func (s *kubeletSim) enqueuePV(obj interface{}) {
	pv, ok := obj.(*corev1.PersistentVolume)
	if ok && pv.DeletionTimestamp != nil && pv.Status.Phase != corev1.VolumeBound && slices.Contains(pv.Finalizers, pvProtection) {
		s.queue.Add(simItem{name: pv.Name, uid: pv.UID, pv: true})
	}
}

func (s *kubeletSim) processNext(ctx context.Context) bool {
	item, quit := s.queue.Get()
	if quit {
		return false
	}
	defer s.queue.Done(item)
	if err := s.process(ctx, item); err != nil && ctx.Err() == nil {
		s.t.Logf("simulator: %s: %v (retrying)", item.name, err)
		s.queue.AddRateLimited(item)
		return true
	}
	s.queue.Forget(item)
	return true
}

func (s *kubeletSim) process(ctx context.Context, item simItem) error {
	switch {
	case item.pv:
		return s.unprotectPV(ctx, item)
	case item.deleted:
		return s.collectPods(ctx, item)
	}
	job, err := s.client.BatchV1().Jobs(namespace).Get(ctx, item.name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if finished, _ := jobs.IsFinished(job); finished || job.DeletionTimestamp != nil || job.UID != item.uid {
		return nil
	}
	if job.Labels[jobs.LabelRole] == jobs.RoleDiscovery {
		return s.runDiscovery(ctx, job)
	}
	s.mu.Lock()
	o := s.cleanup(jobs.Attempt(job))
	s.mu.Unlock()
	switch o {
	case succeed:
		return s.run(ctx, job, true, "cleaned")
	case fail:
		return s.run(ctx, job, false, "blkdiscard: device or resource busy")
	}
	return nil
}

// finish ends a held cleanup Job.
func (s *kubeletSim) finish(t *testing.T, name string, succeeded bool) {
	t.Helper()
	job, err := s.client.BatchV1().Jobs(namespace).Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("finishing Job %s: %v", name, err)
	}
	msg := "cleaned"
	if !succeeded {
		msg = "blkdiscard: device or resource busy"
	}
	if err := s.run(t.Context(), job, succeeded, msg); err != nil {
		t.Fatalf("finishing Job %s: %v", name, err)
	}
}

// runDiscovery ends a discovery Job with the node's report, one shard per
// container, the way the discover command writes them.
func (s *kubeletSim) runDiscovery(ctx context.Context, job *batchv1.Job) error {
	node := job.Annotations[jobs.AnnNode]
	s.mu.Lock()
	r := s.disks[node]
	s.mu.Unlock()
	if r == nil {
		r = &report.Report{Version: report.Version, Node: node}
	}
	msgs, err := report.Encode(r, len(job.Spec.Template.Spec.Containers))
	if err != nil {
		return err
	}
	if err := s.run(ctx, job, true, msgs...); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.discovered[node] = append(s.discovered[node], job.UID)
	return nil
}

// run creates the Job's pod on its node, terminates its containers with
// msgs, and marks the Job finished.
func (s *kubeletSim) run(ctx context.Context, job *batchv1.Job, succeeded bool, msgs ...string) error {
	pod, err := s.createPod(ctx, job)
	if err != nil {
		return err
	}
	now := metav1.Now()
	pod.Status.Phase, pod.Status.StartTime = corev1.PodSucceeded, &job.CreationTimestamp
	code, reason := int32(0), "Completed"
	if !succeeded {
		pod.Status.Phase, code, reason = corev1.PodFailed, 1, "Error"
	}
	pod.Status.ContainerStatuses = nil
	for i, c := range pod.Spec.Containers {
		msg := ""
		if i < len(msgs) {
			msg = msgs[i]
		}
		pod.Status.ContainerStatuses = append(pod.Status.ContainerStatuses, corev1.ContainerStatus{
			Name: c.Name, Image: c.Image, ImageID: "sha256:0", ContainerID: "containerd://" + string(pod.UID) + c.Name,
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code, Reason: reason,
				Message: msg, StartedAt: job.CreationTimestamp, FinishedAt: now}}})
	}
	if _, err := s.client.CoreV1().Pods(namespace).UpdateStatus(ctx, pod, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("failed to set pod status: %w", err)
	}
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		j, err := s.client.BatchV1().Jobs(namespace).Get(ctx, job.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if j.UID != job.UID {
			return nil
		}
		setJobFinished(j, succeeded, now)
		_, err = s.client.BatchV1().Jobs(namespace).UpdateStatus(ctx, j, metav1.UpdateOptions{})
		return err
	})
	// The master consumes a discovery report as soon as the pod succeeded,
	// and may delete the Job before it is marked complete.
	return client404(err)
}

func setJobFinished(j *batchv1.Job, succeeded bool, now metav1.Time) {
	cond := func(t batchv1.JobConditionType, reason string) batchv1.JobCondition {
		return batchv1.JobCondition{Type: t, Status: corev1.ConditionTrue, Reason: reason, LastProbeTime: now, LastTransitionTime: now}
	}
	j.Status.StartTime, j.Status.Active, j.Status.Ready = &j.CreationTimestamp, 0, ptr.To[int32](0)
	if succeeded {
		j.Status.Succeeded, j.Status.CompletionTime = 1, &now
		j.Status.Conditions = append(j.Status.Conditions, cond(batchv1.JobSuccessCriteriaMet, "CompletionsReached"),
			cond(batchv1.JobComplete, "CompletionsReached"))
		return
	}
	j.Status.Failed = 1
	j.Status.Conditions = append(j.Status.Conditions, cond(batchv1.JobFailureTarget, "BackoffLimitExceeded"),
		cond(batchv1.JobFailed, "BackoffLimitExceeded"))
}

// createPod creates the Job's pod from its template on the node its
// affinity pins it to, unless the test sends it elsewhere.
func (s *kubeletSim) createPod(ctx context.Context, job *batchv1.Job) (*corev1.Pod, error) {
	tmpl := job.Spec.Template
	node := pinnedNode(job)
	s.mu.Lock()
	if other, ok := s.podNode[node]; ok {
		node = other
	}
	s.mu.Unlock()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
		Name: job.Name + "-" + string(job.UID)[:5], Namespace: namespace,
		Labels: tmpl.Labels, Annotations: tmpl.Annotations,
		OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(job, batchv1.SchemeGroupVersion.WithKind("Job"))},
	}, Spec: *tmpl.Spec.DeepCopy()}
	pod.Spec.NodeName = node
	created, err := s.client.CoreV1().Pods(namespace).Create(ctx, pod, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return s.client.CoreV1().Pods(namespace).Get(ctx, pod.Name, metav1.GetOptions{})
	}
	if err != nil {
		return nil, fmt.Errorf("failed to create pod: %w", err)
	}
	return created, nil
}

func pinnedNode(job *batchv1.Job) string {
	a := job.Spec.Template.Spec.Affinity
	if a == nil || a.NodeAffinity == nil || a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return ""
	}
	for _, term := range a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
		for _, f := range term.MatchFields {
			if f.Key == "metadata.name" && f.Operator == corev1.NodeSelectorOpIn && len(f.Values) == 1 {
				return f.Values[0]
			}
		}
	}
	return ""
}

// collectPods deletes the pods of a deleted Job, as the garbage collector.
func (s *kubeletSim) collectPods(ctx context.Context, item simItem) error {
	pods, err := s.client.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{
		LabelSelector: labels.Set{batchv1.JobNameLabel: item.name}.String()})
	if err != nil {
		return err
	}
	for _, p := range pods.Items {
		if ref := metav1.GetControllerOf(&p); ref == nil || ref.UID != item.uid {
			continue
		}
		err := s.client.CoreV1().Pods(namespace).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
		if err != nil && !apierrors.IsNotFound(err) {
			return err
		}
	}
	return nil
}

// unprotectPV removes the pv-protection finalizer of a deleted unbound PV.
func (s *kubeletSim) unprotectPV(ctx context.Context, item simItem) error {
	pv, err := s.client.CoreV1().PersistentVolumes().Get(ctx, item.name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) || err == nil && pv.UID != item.uid {
		return nil
	}
	if err != nil {
		return err
	}
	pv.Finalizers = slices.DeleteFunc(pv.Finalizers, func(f string) bool { return f == pvProtection })
	_, err = s.client.CoreV1().PersistentVolumes().Update(ctx, pv, metav1.UpdateOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// waitForDiscovery waits until the simulator has finished more than after
// discovery Jobs on the node and the master has consumed (deleted) the last
// one: the master has then acted on that report. It returns the new count.
func (s *kubeletSim) waitForDiscovery(t *testing.T, node string, after int) int {
	t.Helper()
	n := 0
	name := naming.DiscoveryJobName(node)
	poll(t, "discovery on "+node+" consumed", func(ctx context.Context) (bool, error) {
		done := s.discoveries(node)
		if len(done) <= after {
			return false, nil
		}
		n = len(done)
		j, err := s.client.BatchV1().Jobs(namespace).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return err == nil && j.UID != done[len(done)-1], err
	})
	return n
}
