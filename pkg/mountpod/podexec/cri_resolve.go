package podexec

import (
	"context"
	"errors"
	"fmt"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodeplug/nodeplug/pkg/mountpod"
)

// The labels the kubelet puts on every container it creates; the runtime
// keeps them, and nobody with API rights can change them.
const (
	criLabelPodUID        = "io.kubernetes.pod.uid"
	criLabelPodNamespace  = "io.kubernetes.pod.namespace"
	criLabelPodName       = "io.kubernetes.pod.name"
	criLabelContainerName = "io.kubernetes.container.name"
)

// ErrContainerMismatch: the container ID a mount pod's API status names is
// not the runtime's running container of that pod. Whoever may write
// pods/status could otherwise point the kubelet's exec at any container on
// the node.
var ErrContainerMismatch = errors.New("the container ID in the mount pod's status is not the runtime's container of that pod")

// ErrPodGone: the runtime runs no container of the mount pod an operation
// was resolved to (it was deleted or restarted since). The operation fails;
// it is not moved to the host or to another pod.
var ErrPodGone = errors.New("the mount pod's container is not running")

// resolve asks the runtime which running container is t's: the one whose
// runtime labels carry t's pod UID, namespace, name and container name. The
// API status's ID must be that container.
func (e *CRIExecutor) resolve(ctx context.Context, t mountpod.Target) (string, error) {
	if t.UID == "" || t.Container == "" {
		return "", fmt.Errorf("mount pod %s: no pod UID or container name to resolve through the runtime", t)
	}
	resp, err := e.client.ListContainers(ctx, &runtimeapi.ListContainersRequest{Filter: &runtimeapi.ContainerFilter{
		State: &runtimeapi.ContainerStateValue{State: runtimeapi.ContainerState_CONTAINER_RUNNING},
		LabelSelector: map[string]string{
			criLabelPodUID:        string(t.UID),
			criLabelPodNamespace:  t.Namespace,
			criLabelPodName:       t.Name,
			criLabelContainerName: t.Container,
		},
	}})
	if err != nil {
		return "", fmt.Errorf("CRI ListContainers for mount pod %s: %w", t, err)
	}
	var ids []string
	for _, c := range resp.GetContainers() {
		// A runtime that ignores the filter must not widen the match.
		l := c.GetLabels()
		if c.GetState() == runtimeapi.ContainerState_CONTAINER_RUNNING && l[criLabelPodUID] == string(t.UID) &&
			l[criLabelPodNamespace] == t.Namespace && l[criLabelPodName] == t.Name && l[criLabelContainerName] == t.Container {
			ids = append(ids, c.GetId())
		}
	}
	switch {
	case len(ids) == 0:
		return "", fmt.Errorf("%w: mount pod %s (uid %s): the runtime has no running container of that pod and name", ErrPodGone, t, t.UID)
	case len(ids) > 1:
		return "", fmt.Errorf("mount pod %s (uid %s): the runtime has %d running containers of that pod and name", t, t.UID, len(ids))
	case t.ContainerID != "" && t.ContainerID != ids[0]:
		return "", fmt.Errorf("%w: mount pod %s (uid %s) status names container %s, the runtime runs %s",
			ErrContainerMismatch, t, t.UID, t.ContainerID, ids[0])
	}
	return ids[0], nil
}
