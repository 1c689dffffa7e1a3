package mountpod

import (
	"fmt"
	"path/filepath"
	"strings"

	v1 "k8s.io/api/core/v1"
)

// CheckPropagation reports why pod cannot run mounts for a kubelet whose
// root dir is root, or nil when it can: the container that runs utilities
// (TargetFor's choice) must mount a hostPath volume at the same path as on
// the host, that path must be root or hold it, and the mount must have
// mountPropagation Bidirectional. Without that, a mount made in the pod
// stays in the pod's mount namespace: the host and the consumer see the
// empty directory beneath it, and data lands on the node's root disk.
func CheckPropagation(pod *v1.Pod, root string) error {
	root = filepath.Clean(root)
	name := pod.Annotations[ContainerAnnotation]
	var ctr *v1.Container
	for i := range pod.Spec.Containers {
		if c := &pod.Spec.Containers[i]; (name == "" && i == 0) || c.Name == name {
			ctr = c
			break
		}
	}
	if ctr == nil {
		return fmt.Errorf("mount pod %s/%s has no container %q (annotation %s)", pod.Namespace, pod.Name, name, ContainerAnnotation)
	}
	hostPaths := map[string]string{}
	for _, v := range pod.Spec.Volumes {
		if v.HostPath != nil {
			hostPaths[v.Name] = filepath.Clean(v.HostPath.Path)
		}
	}
	var near string
	for _, m := range ctr.VolumeMounts {
		hp, ok := hostPaths[m.Name]
		if !ok || m.SubPath != "" || m.SubPathExpr != "" || !within(root, hp) {
			continue
		}
		mode := v1.MountPropagationNone
		if m.MountPropagation != nil {
			mode = *m.MountPropagation
		}
		if filepath.Clean(m.MountPath) == hp && mode == v1.MountPropagationBidirectional {
			return nil
		}
		near = fmt.Sprintf("; its volume %q (hostPath %s) is mounted at %s with propagation %s", m.Name, hp, m.MountPath, mode)
	}
	return fmt.Errorf("mount pod %s/%s: container %q does not mount the kubelet root dir %s at the same path with mountPropagation: Bidirectional%s; "+
		"mounts made in it would not reach the host, so it serves no volume until its spec mounts hostPath %s at %s with mountPropagation: Bidirectional",
		pod.Namespace, pod.Name, ctr.Name, root, near, root, root)
}

// within reports whether path is dir or below it.
func within(path, dir string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
}
