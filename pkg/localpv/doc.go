// Package localpv is the root of nodeplug's distributed local PersistentVolume
// static provisioner (design 5 of the SIG Storage proposal: a master that
// creates Jobs, and a watcher in a DaemonSet). See README.md for the wire
// contracts between the components. The subpackages are:
//
//   - config: parses and validates the provisioner's ConfigMap (storageClassMap and friends)
//   - naming: derives the deterministic names of the PVs and Jobs
//   - report: what a discovery Job tells the master, encoded in container termination messages
//   - validation: checks a discovery report against the configuration and the node the Job ran on
//   - discovery: the node-side work of a discovery Job (scan each class directory, report its volumes)
//   - identity: what a volume's disk is (WWN, serial, file system UUID, loop backing file), recorded on its PV and checked before a wipe
//   - cleanup: the node-side work of a cleanup Job (wipe one volume)
//   - wipe: the cleaner programs the image installs at upstream's /scripts/*.sh paths (shred.sh, dd_zero.sh, blkdiscard.sh, quick_reset.sh, fsclean.sh)
//   - jobs: the Job specs the master creates, and the labels, annotations and finalizers it sets
//   - controller: the master, the only component that writes PersistentVolumes; its roles are
//     subpackages (discoveryjobs, publishing, cleanupjobs, machine, blockedclaims, inventory, and
//     pvops, their shared PV writes)
//   - nodecleanup: the master's release of the claims of PVs whose Node was deleted, per class, after a delay
//   - unwiped: the memory of the disks dropped without a wipe, shared by every installation (UnwipedDisks); such a disk is held when it returns
//   - watcher: the per-node DaemonSet that writes the node's NodeDiskState when its directories change
//   - metrics: the Prometheus metrics of the master and the watcher (nodeplug_local_volume_provisioner_*)
//   - testutil: test helpers that create real tmpfs mounts and loop devices
//
// The NodeDiskState API and its CustomResourceDefinition are in the
// github.com/nodeplug/localpv-api staging module; cmd/local-volume-provisioner
// wires these packages into one binary.
package localpv
