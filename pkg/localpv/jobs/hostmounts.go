package jobs

import v1 "k8s.io/api/core/v1"

// HostUdevDir is the host's udev run directory, which discovery Jobs and
// the cleanup Jobs of directories mount read-only at UdevMountPath, so that
// discovery reads udev's record of each disk (discovery.DefaultUdevDataDir)
// and both find a file system's UUID where the kernel has no ioctl for it
// and the device cannot be read (ext4 before Linux 6.0, unprivileged).
const (
	HostUdevDir   = "/run/udev"
	UdevMountPath = "/host/run/udev"
)

// HostEtcPath is where discovery and cleanup containers see the host's /etc,
// and MachineIDPath the host's /etc/machine-id in it (the cleanup command's
// default --machine-id-file).
const (
	HostEtcPath   = "/host/etc"
	MachineIDPath = HostEtcPath + "/machine-id"
)

// withHostEtc adds the host's /etc, read-only at HostEtcPath, as a
// directory: a node without /etc/machine-id runs the pod, which then
// reads no machine ID, rather than leaving it Pending. Discovery and
// cleanup read the machine ID there, and find which file system is the
// OS's (package identity: a directory on it is bound to its machine).
func withHostEtc(vols []v1.Volume, mounts []v1.VolumeMount) ([]v1.Volume, []v1.VolumeMount) {
	return append(vols, hostPathVolume("host-etc", "/etc", v1.HostPathDirectory)),
		append(mounts, v1.VolumeMount{Name: "host-etc", MountPath: HostEtcPath, ReadOnly: true})
}
