// Package controller is the master of the local volume provisioner: the only
// component that writes PersistentVolumes. It is driven by informers on Nodes,
// PVs, StorageClasses, its own Jobs and their pods, the watchers'
// NodeDiskState objects and the replaced-machine admission policy.
//
// Work is keyed three ways on one queue:
//
//   - "node/<name>": check the machine of the node's PVs (package machine),
//     run and consume the node's discovery Job (package discoveryjobs),
//     record its inventory (package inventory), publish the volumes it
//     reports and notice vanished disks (package publishing), and handle
//     deleted nodes;
//   - "vol/<volume-id>": wipe a released volume with a cleanup Job and delete
//     its PV afterwards (package cleanupjobs);
//   - "claims/blocked": write the claims of marked PVs into the admission
//     policy (package blockedclaims).
//
// The roles are subpackages, built and wired in roles.go; the controller is
// the loop: its handlers turn watch events into keys, its indexes answer
// what the caches hold (the actual state), and each key is reconciled by
// its role. PV writes that several roles need are in package pvops.
//
// The safety rule is that no PV is created for a volume that has a cleanup
// Job which has not succeeded. Cleanup Jobs carry a finalizer so that they
// survive ttlSecondsAfterFinished until the master has acted on them, and the
// master's PVs carry a finalizer so that a used PV cannot disappear before
// its disk is wiped. All state is rebuilt from Jobs and PVs after a restart.
package controller
