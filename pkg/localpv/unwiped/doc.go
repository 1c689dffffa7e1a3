// Package unwiped remembers the disks of released PVs that were dropped
// without a wipe (their cleanup found another disk at the path, their
// machine was replaced, or their node was deleted): a tenant's data is still
// on them. The master wipes such a disk, checked against its identity,
// before it publishes it again, wherever it comes back.
//
// The memory is one ConfigMap in the master's namespace; each entry is
// keyed by the disk's identity (and the node, for a weak identity).
package unwiped
