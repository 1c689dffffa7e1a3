package mountpod

import (
	"fmt"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Target is the container a utility runs in.
type Target struct {
	Namespace, Name string
	UID             types.UID
	// Container is the container's name, ContainerID its runtime ID
	// without the "<runtime>://" prefix.
	Container, ContainerID string
}

// String returns "namespace/name/container".
func (t Target) String() string { return t.Namespace + "/" + t.Name + "/" + t.Container }

// Qualifies reports whether pod may serve mount utilities on node in
// namespace: it is there, Running, Ready and not being deleted. The label is
// checked by the caller.
func Qualifies(pod *v1.Pod, namespace, node string) bool {
	if !Runs(pod, namespace, node) {
		return false
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == v1.PodReady {
			return c.Status == v1.ConditionTrue
		}
	}
	return false
}

// Runs reports whether pod is in namespace on node (any node when node is
// ""), Running and not being deleted, Ready or not. A pod that served a
// flexvolume driver keeps it loaded while it runs: its readiness drops for
// a moment when the kubelet restarts (until the first readiness probe),
// which must not unload the driver.
func Runs(pod *v1.Pod, namespace, node string) bool {
	return pod.Namespace == namespace && pod.Spec.NodeName != "" && (node == "" || pod.Spec.NodeName == node) &&
		pod.DeletionTimestamp == nil && pod.Status.Phase == v1.PodRunning
}

// Choose returns the pod that serves, of several qualifying ones: the oldest
// (creation time), then the first by name. The choice is deterministic and
// stays put while the chosen pod lives, so a rollout does not move calls
// back and forth.
func Choose(pods []*v1.Pod) *v1.Pod {
	if len(pods) == 0 {
		return nil
	}
	return slices.MinFunc(pods, func(a, b *v1.Pod) int {
		if c := a.CreationTimestamp.Compare(b.CreationTimestamp.Time); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
}

// TargetFor returns the container of pod that runs utilities: the one named
// by the ContainerAnnotation, or the first container. It must be running.
func TargetFor(pod *v1.Pod) (Target, error) {
	t := Target{Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID}
	t.Container = pod.Annotations[ContainerAnnotation]
	if t.Container == "" && len(pod.Spec.Containers) > 0 {
		t.Container = pod.Spec.Containers[0].Name
	}
	for _, s := range pod.Status.ContainerStatuses {
		if s.Name != t.Container {
			continue
		}
		if s.State.Running == nil || s.ContainerID == "" {
			return Target{}, fmt.Errorf("container %q of mount pod %s/%s is not running", t.Container, pod.Namespace, pod.Name)
		}
		_, id, ok := strings.Cut(s.ContainerID, "://")
		if !ok {
			id = s.ContainerID
		}
		t.ContainerID = id
		return t, nil
	}
	return Target{}, fmt.Errorf("mount pod %s/%s has no container %q (annotation %s)", pod.Namespace, pod.Name, t.Container, ContainerAnnotation)
}
