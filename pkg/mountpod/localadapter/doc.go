// Package localadapter is a thin adapter around upstream's "kubernetes.io/local-volume"
// plugin for --experimental-mount-namespace: the wrapped plugin formats and
// checks block-backed local PersistentVolumes (blkid, mkfs.<fsType>,
// fsck, then mount) through one Operation, the mounter and the exec of a
// single resolve of pod or host (pkg/mountpod/mounter,
// pkg/mountpod/podexec), so that those utilities run together in the
// plugin's mount pod. Everything else is upstream's.
//
// Upstream's local plugin builds its SafeFormatAndMount with a host exec and
// offers no seam, so MountDevice for block devices is nodeplug's own code;
// it follows upstream's behaviour: the fsType defaults to ext4, "ro" is
// added for read-only specs, and a failed mount removes the mount point.
// When the plugin it wraps has a DeviceMounter that is a DeviceProver (the
// local PV identity check, pkg/localpv/volumecheck/localplugin), it asks
// that prover before it formats or mounts, so the two wrappers compose in
// either order.
// Directories, block-mode volumes, unmounting and expansion are upstream's
// (node expansion runs resize tools on the host).
package localadapter
