// Package unwiped remembers the disks of released PVs that were dropped
// without a wipe (their cleanup found another disk at the path, their
// machine was replaced, or their node was deleted): a tenant's data is still
// on them. The master remembers such a disk before it deletes the PV, and
// wipes the disk, checked against its identity, before it publishes it
// again, wherever it comes back.
//
// The memory is one ConfigMap in the master's namespace, created empty at
// install; each entry is keyed by the disk's identity (and the node, for a
// weak identity). A missing memory, or an entry that does not parse, is an
// error, never "nothing unwiped": the master then publishes and drops
// nothing. The data is bounded by MaxBytes, and entries of nodes gone from
// the cluster expire after a retention (Store.Expire).
package unwiped
