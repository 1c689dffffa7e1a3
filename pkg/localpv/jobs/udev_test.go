package jobs

import (
	"testing"

	batchv1 "k8s.io/api/batch/v1"

	"github.com/nodeplug/nodeplug/pkg/localpv/identity"
	"github.com/nodeplug/nodeplug/pkg/localpv/report"
)

// TestJobsReadUdevFileSystemUUIDs: discovery Jobs of every class and the
// cleanup Jobs of directories mount udev's database read-only, where a
// directory's file system UUID is found on kernels without an ioctl for it
// (ext4 before Linux 6.0) and without access to the device. Before, only a
// class with a disk selector had it, so a directory on ext4 on Linux 5.15
// was recorded without its UUID.
func TestJobsReadUdevFileSystemUUIDs(t *testing.T) {
	cfg := testConfig(t, nil)
	p := Params{Namespace: "lpv", Image: "img", DiscoveryShards: 1}
	target := func(class string, kind report.VolumeKind) CleanupTarget {
		return CleanupTarget{PVName: "pv", PVUID: "uid", NodeName: "a", Class: class, Kind: kind,
			HostPath: "/mnt/" + class + "/v1", Mount: cfg.StorageClassMap[class]}
	}
	for _, tc := range []struct {
		name string
		job  *batchv1.Job
		want bool
	}{
		{name: "discovery of directory classes", job: DiscoveryJob(p, cfg, "a", 1, nil), want: true},
		{name: "directory cleanup", job: CleanupJob(p, cfg, target("fast", report.KindDirectory), 1), want: true},
		{name: "block cleanup reads the device itself", job: CleanupJob(p, cfg, target("blk", report.KindBlock), 1)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ps := tc.job.Spec.Template.Spec
			found := false
			for _, v := range ps.Volumes {
				found = found || v.HostPath != nil && v.HostPath.Path == HostUdevDir
			}
			for _, m := range ps.Containers[0].VolumeMounts {
				if m.Name == "udev" && (m.MountPath != UdevMountPath || !m.ReadOnly) {
					t.Errorf("udev mount %+v, want read-only at %s", m, UdevMountPath)
				}
			}
			if found != tc.want {
				t.Errorf("udev database mounted %v, want %v", found, tc.want)
			}
		})
	}
}

// TestJobsCarryForcedFSUUIDSources: a master told to force sources of a file
// system's UUID unavailable (e2e on a kernel with FS_IOC_GETFSUUID) passes
// it to its discovery and cleanup containers; by default they get no
// environment.
func TestJobsCarryForcedFSUUIDSources(t *testing.T) {
	cfg := testConfig(t, nil)
	target := CleanupTarget{PVName: "pv", PVUID: "uid", NodeName: "a", Class: "fast", Kind: report.KindDirectory,
		HostPath: "/mnt/fast/v1", Mount: cfg.StorageClassMap["fast"]}
	for _, tc := range []struct {
		name string
		p    Params
		want string
	}{
		{name: "forced", p: Params{Namespace: "lpv", Image: "img", DiscoveryShards: 1, FSUUIDUnavailable: "generic-ioctl"}, want: "generic-ioctl"},
		{name: "default", p: Params{Namespace: "lpv", Image: "img", DiscoveryShards: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, j := range []*batchv1.Job{DiscoveryJob(tc.p, cfg, "a", 1, nil), CleanupJob(tc.p, cfg, target, 1)} {
				env := j.Spec.Template.Spec.Containers[0].Env
				got := ""
				for _, e := range env {
					if e.Name == identity.UnavailableEnv {
						got = e.Value
					}
				}
				if got != tc.want || tc.want == "" && len(env) != 0 {
					t.Errorf("Job %s: env %v, want %s=%q", j.Name, env, identity.UnavailableEnv, tc.want)
				}
			}
		})
	}
}
