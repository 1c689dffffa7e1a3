package jobs

import (
	"errors"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	core "k8s.io/client-go/testing"
)

func terminated(code int32, msg string) v1.ContainerStatus {
	return v1.ContainerStatus{Name: "c", State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: code, Message: msg}}}
}

func TestPodSucceeded(t *testing.T) {
	two := []v1.Container{{Name: "a"}, {Name: "b"}}
	tests := []struct {
		name string
		pod  v1.Pod
		want bool
	}{
		{name: "phase Succeeded", pod: v1.Pod{Status: v1.PodStatus{Phase: v1.PodSucceeded}}, want: true},
		{name: "phase Failed", pod: v1.Pod{Spec: v1.PodSpec{RestartPolicy: v1.RestartPolicyNever, Containers: two[:1]},
			Status: v1.PodStatus{Phase: v1.PodFailed, ContainerStatuses: []v1.ContainerStatus{terminated(0, "")}}}},
		{name: "every container exited 0 before the phase is set", want: true,
			pod: v1.Pod{Spec: v1.PodSpec{RestartPolicy: v1.RestartPolicyNever, Containers: two},
				Status: v1.PodStatus{Phase: v1.PodRunning, ContainerStatuses: []v1.ContainerStatus{terminated(0, ""), terminated(0, "")}}}},
		{name: "one container still runs", pod: v1.Pod{Spec: v1.PodSpec{RestartPolicy: v1.RestartPolicyNever, Containers: two},
			Status: v1.PodStatus{Phase: v1.PodRunning, ContainerStatuses: []v1.ContainerStatus{terminated(0, ""), {Name: "b"}}}}},
		{name: "a container status is missing", pod: v1.Pod{Spec: v1.PodSpec{RestartPolicy: v1.RestartPolicyNever, Containers: two},
			Status: v1.PodStatus{Phase: v1.PodRunning, ContainerStatuses: []v1.ContainerStatus{terminated(0, "")}}}},
		{name: "a container failed", pod: v1.Pod{Spec: v1.PodSpec{RestartPolicy: v1.RestartPolicyNever, Containers: two},
			Status: v1.PodStatus{Phase: v1.PodRunning, ContainerStatuses: []v1.ContainerStatus{terminated(0, ""), terminated(1, "")}}}},
		{name: "a pod that restarts is never final", pod: v1.Pod{Spec: v1.PodSpec{RestartPolicy: v1.RestartPolicyOnFailure, Containers: two[:1]},
			Status: v1.PodStatus{Phase: v1.PodRunning, ContainerStatuses: []v1.ContainerStatus{terminated(0, "")}}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := PodSucceeded(&tc.pod); got != tc.want {
				t.Errorf("PodSucceeded = %t, want %t", got, tc.want)
			}
		})
	}
}

func TestFailureMessage(t *testing.T) {
	ok := &v1.Pod{Status: v1.PodStatus{ContainerStatuses: []v1.ContainerStatus{terminated(0, "report")}}}
	silent := &v1.Pod{Status: v1.PodStatus{ContainerStatuses: []v1.ContainerStatus{terminated(1, "")}}}
	failed := &v1.Pod{Status: v1.PodStatus{ContainerStatuses: []v1.ContainerStatus{terminated(2, "disk busy")}}}
	tests := []struct {
		name string
		pods []*v1.Pod
		want string
	}{
		{name: "no pods", want: "no termination message"},
		{name: "only a succeeded container's message", pods: []*v1.Pod{ok}, want: "no termination message"},
		{name: "the first failed container with a message", pods: []*v1.Pod{ok, silent, failed}, want: "disk busy"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := FailureMessage(tc.pods); got != tc.want {
				t.Errorf("FailureMessage = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestJobFailureMessage: a Job that failed without a container message
// (past its deadline with its pod Pending) still says why.
func TestJobFailureMessage(t *testing.T) {
	failedJob := &batchv1.Job{Status: batchv1.JobStatus{Conditions: []batchv1.JobCondition{{Type: batchv1.JobFailed,
		Status: v1.ConditionTrue, Reason: batchv1.JobReasonDeadlineExceeded, Message: "Job was active longer than specified deadline"}}}}
	pending := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Status: v1.PodStatus{Phase: v1.PodPending,
		Conditions: []v1.PodCondition{{Type: v1.PodReady, Status: v1.ConditionFalse, Reason: "ContainersNotReady", Message: "containers with unready status: [cleanup]"}}}}
	failed := &v1.Pod{Status: v1.PodStatus{ContainerStatuses: []v1.ContainerStatus{terminated(2, "disk busy")}}}
	tests := []struct {
		name string
		job  *batchv1.Job
		pods []*v1.Pod
		want []string
	}{
		{name: "a container's message wins", job: failedJob, pods: []*v1.Pod{failed}, want: []string{"disk busy"}},
		{name: "past the deadline with a Pending pod", job: failedJob, pods: []*v1.Pod{pending},
			want: []string{batchv1.JobReasonDeadlineExceeded, "pod p was Pending", "ContainersNotReady"}},
		{name: "no pods, no condition", job: &batchv1.Job{}, want: []string{NoTerminationMessage}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := JobFailureMessage(tc.job, tc.pods)
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("JobFailureMessage = %q, want it to contain %q", got, w)
				}
			}
		})
	}
}

func TestBackoff(t *testing.T) {
	tests := []struct {
		name string
		n    int
		want time.Duration
	}{
		{name: "first retry", n: 1, want: 10 * time.Second},
		{name: "third retry", n: 3, want: 40 * time.Second},
		{name: "capped", n: 10, want: time.Minute},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := Backoff(10*time.Second, time.Minute, tc.n); got != tc.want {
				t.Errorf("Backoff(%d) = %v, want %v", tc.n, got, tc.want)
			}
		})
	}
}

func TestDelete(t *testing.T) {
	gr := schema.GroupResource{Group: "batch", Resource: "jobs"}
	tests := []struct {
		name    string
		fail    error
		wantErr string
	}{
		{name: "deleted"},
		{name: "already gone", fail: apierrors.NewNotFound(gr, "j")},
		{name: "replaced by another Job of the name", fail: apierrors.NewConflict(gr, "j", errors.New("uid"))},
		{name: "refused", fail: errors.New("forbidden"), wantErr: "failed to delete Job j"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			kube := fake.NewClientset()
			var opts metav1.DeleteOptions
			kube.PrependReactor("delete", "jobs", func(a core.Action) (bool, runtime.Object, error) {
				opts = a.(core.DeleteAction).GetDeleteOptions()
				return true, nil, tc.fail
			})
			job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "j", Namespace: "lpv", UID: "job-uid"}}
			err := Delete(t.Context(), kube.BatchV1(), job)
			if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Fatalf("Delete error = %v, want %q", err, tc.wantErr)
			}
			if opts.Preconditions == nil || *opts.Preconditions.UID != "job-uid" || *opts.PropagationPolicy != metav1.DeletePropagationBackground {
				t.Errorf("delete options %+v, want the Job's UID and background propagation", opts)
			}
		})
	}
}

func TestNextAttempt(t *testing.T) {
	job := func(attempt string) *batchv1.Job {
		return &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{AnnAttempt: attempt}}}
	}
	tests := []struct {
		name string
		js   []*batchv1.Job
		want int
	}{
		{name: "none", want: 1},
		{name: "after the highest", js: []*batchv1.Job{job("3"), job("1")}, want: 4},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := NextAttempt(tc.js); got != tc.want {
				t.Errorf("NextAttempt = %d, want %d", got, tc.want)
			}
		})
	}
}
