package jobs

import (
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
)

// TestDiscoveryJobMountsHostEtc: discovery reads the host's machine-id file
// to tell directories on the OS's file system (bound to their machine) from
// others, so every discovery Job mounts the host's /etc read-only, as a
// directory, so that a node without the file still runs it.
func TestDiscoveryJobMountsHostEtc(t *testing.T) {
	j := DiscoveryJob(Params{Namespace: "ns", Image: "img", DiscoveryShards: 1}, testConfig(t, nil), "node-1", 1, nil)
	ps := j.Spec.Template.Spec
	if !slices.ContainsFunc(ps.Volumes, func(v v1.Volume) bool {
		return v.HostPath != nil && v.HostPath.Path == "/etc" && *v.HostPath.Type == v1.HostPathDirectory
	}) {
		t.Errorf("volumes %v lack the host's /etc as a directory", ps.Volumes)
	}
	for _, c := range ps.Containers {
		if !slices.ContainsFunc(c.VolumeMounts, func(m v1.VolumeMount) bool { return m.MountPath == HostEtcPath && m.ReadOnly }) {
			t.Errorf("container %s does not mount the host's /etc read-only at %s", c.Name, HostEtcPath)
		}
	}
}
