// Package localplugin is a thin adapter around upstream's
// "kubernetes.io/local-volume" plugin for --experimental-local-volume-identity-check:
// before the kubelet hands a local PV's disk to a pod it proves, with a
// volumecheck.Checker, that the PV's path leads to the disk the PV was
// published for:
//
//   - Mounter.SetUp and SetUpAt (file system PVs, before the bind mount
//     into the pod), and for a PV whose path is a block device also that
//     the kubelet's device mount path holds that device's file system;
//   - DeviceMounter.MountDevice (a PV whose path is a block device, before
//     any blkid, mkfs, fsck or mount);
//   - BlockVolumeMapper.SetUpDevice and MapPodDevice (block-mode PVs,
//     before the device is mapped into the pod).
//
// A refusal is returned as the operation's error: nothing was mounted,
// formatted or mapped, and the kubelet's volume manager reports it as a
// FailedMount Event on the pod and retries. Volumes reconstructed after a
// kubelet restart are marked uncertain and mounted again through the same
// plugin with the PV the API server holds, so they are checked too.
//
// The wrapper implements every interface upstream's plugin does, so it
// composes with pkg/mountpod/localadapter's wrapper in either order.
// Everything else (unmounting, unmapping, reconstruction, expansion) is the
// wrapped plugin's.
package localplugin
