// Package volumecheck proves, on the node, that a local PersistentVolume's
// path leads to the disk the PV was published for, at the moment the kubelet
// is about to hand the disk to a pod.
//
// The local volume provisioner records a PV's disk in the annotation
// localpv.nodeplug.io/disk-id (package identity). A Checker reads what the
// PV's spec.local.path leads to now (a directory's file system, a block
// device, a partition), in the record's form where it has that form
// (identity.DirectoryAs: the kubelet computes the file handle with the
// device's identity that unprivileged discovery recorded, though it could
// read the file system's UUID), and compares it with the record:
//
//   - same identity: the mount goes ahead;
//   - another disk (Compare says Different, or the disk found is one that
//     another PV this Checker has seen was published for): refused,
//     reason mismatch;
//   - a strong recorded identity that cannot be read or compared now:
//     refused, reason unreadable;
//   - a weak or legacy recorded identity that cannot be compared, and a PV
//     without the annotation: the mount goes ahead, as upstream's kubelet
//     does.
//
// A refusal is a *Refusal error that names the disk found, the PV whose
// disk it is when the Checker knows, and the fix: restore the mount. It never
// suggests changing the PV. The kubelet's volume manager turns it into a
// FailedMount Event on the pod and retries, so a pod starts on its own disk
// as soon as the mounts are right again.
//
// The Checker keeps in memory which PV each disk identity was recorded by,
// for the local PVs it has checked: the kubelet may not list PVs. The
// package imports nothing of k8s.io/kubernetes; localplugin adapts it to
// upstream's local volume plugin.
package volumecheck
