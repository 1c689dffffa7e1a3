package jobs

import (
	"context"
	"fmt"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	batchclient "k8s.io/client-go/kubernetes/typed/batch/v1"
)

// PodSucceeded reports whether a Job's pod has succeeded, or will: with
// restartPolicy Never a pod whose containers all terminated with exit code
// 0 is final, and the kubelet reports that about a second before it sets
// the phase, which waits for the pod's sandbox to be torn down.
func PodSucceeded(pod *v1.Pod) bool {
	switch {
	case pod.Status.Phase == v1.PodSucceeded:
		return true
	case pod.Status.Phase == v1.PodFailed || pod.Spec.RestartPolicy != v1.RestartPolicyNever:
		return false
	}
	if len(pod.Status.ContainerStatuses) != len(pod.Spec.Containers) {
		return false
	}
	for _, s := range pod.Status.ContainerStatuses {
		if s.State.Terminated == nil || s.State.Terminated.ExitCode != 0 {
			return false
		}
	}
	return true
}

// OwnedBy reports whether a pod is the Job's: the Job is its controller.
func OwnedBy(pod *v1.Pod, job *batchv1.Job) bool {
	ref := metav1.GetControllerOf(pod)
	return ref != nil && ref.UID == job.UID
}

// TerminationMessage returns the termination message of a pod's container,
// or "".
func TerminationMessage(pod *v1.Pod, container string) string {
	for _, s := range pod.Status.ContainerStatuses {
		if s.Name == container && s.State.Terminated != nil {
			return s.State.Terminated.Message
		}
	}
	return ""
}

// FailureMessage returns the first termination message of a container
// that failed in a Job's pods, for Events.
func FailureMessage(pods []*v1.Pod) string {
	for _, pod := range pods {
		for _, s := range pod.Status.ContainerStatuses {
			if t := s.State.Terminated; t != nil && t.ExitCode != 0 && t.Message != "" {
				return t.Message
			}
		}
	}
	return NoTerminationMessage
}

// NoTerminationMessage is what FailureMessage returns when no container
// left a message.
const NoTerminationMessage = "no termination message"

// JobFailureMessage says why a Job failed, for Events: the first
// termination message of a failed container or, when no container ran to
// its end (a Job past its activeDeadlineSeconds whose pod stayed Pending,
// say), the Job's Failed condition and what its pods were waiting for.
func JobFailureMessage(job *batchv1.Job, pods []*v1.Pod) string {
	if msg := FailureMessage(pods); msg != NoTerminationMessage {
		return msg
	}
	msg := NoTerminationMessage
	for _, c := range job.Status.Conditions {
		if c.Type == batchv1.JobFailed && c.Status == v1.ConditionTrue {
			msg = fmt.Sprintf("the Job failed (%s: %s)", c.Reason, c.Message)
		}
	}
	for _, pod := range pods {
		if w := podWaiting(pod); w != "" {
			return msg + "; pod " + pod.Name + " " + w
		}
	}
	return msg
}

// podWaiting says what a pod that never finished a container waited for,
// or "".
func podWaiting(pod *v1.Pod) string {
	for _, s := range pod.Status.ContainerStatuses {
		if w := s.State.Waiting; w != nil {
			return fmt.Sprintf("was waiting: %s %s", w.Reason, w.Message)
		}
	}
	for _, c := range pod.Status.Conditions {
		if c.Status != v1.ConditionTrue && c.Message != "" {
			return fmt.Sprintf("was %s: %s %s", pod.Status.Phase, c.Reason, c.Message)
		}
	}
	if pod.Status.Phase == v1.PodPending {
		return "was Pending"
	}
	return ""
}

// Delete deletes a Job and its pods, with a UID precondition. A Job that
// is gone or was replaced is no error.
func Delete(ctx context.Context, client batchclient.JobsGetter, job *batchv1.Job) error {
	policy := metav1.DeletePropagationBackground
	err := client.Jobs(job.Namespace).Delete(ctx, job.Name, metav1.DeleteOptions{
		Preconditions: &metav1.Preconditions{UID: &job.UID}, PropagationPolicy: &policy})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("failed to delete Job %s: %w", job.Name, err)
	}
	return nil
}

// Backoff returns the delay before retry number n (n >= 1): base doubled
// for each retry after the first, at most limit.
func Backoff(base, limit time.Duration, n int) time.Duration {
	d := base
	for i := 1; i < n && d < limit; i++ {
		d *= 2
	}
	return min(d, limit)
}
