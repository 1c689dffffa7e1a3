// Package unwiped remembers the disks of released PVs that were dropped
// without a wipe (their cleanup found another disk at the path, their
// machine was replaced, or their node was deleted): a tenant's data is still
// on them. The master remembers such a disk before it deletes the PV, and
// holds the disk for an admin, wherever it comes back.
//
// The memory is shared by every installation in the cluster: one
// cluster-scoped UnwipedDisk (localpv.nodeplug.io/v1alpha1) per disk, named
// by its Key: the disk's identity, and for a weak identity also its node
// and path (two file systems of one node may report the same weak one).
// Remembering is one create (AlreadyExists: remembered already). Each
// object carries the finalizer localpv.nodeplug.io/unwiped-memory, which
// only Forget removes (the disk was wiped, an admin kept it, or the entry
// expired); an object someone deleted still counts until then.
//
// A memory that cannot be read (the CRD is not served: ErrMissing), or an
// entry that does not parse or is not named by its disk's key, is an
// error, never "nothing unwiped": the master then publishes and drops
// nothing. The memory is bounded by MaxEntries (ErrFull: the PV is kept),
// and entries of nodes gone from the cluster expire after a retention
// (Store.Expire).
//
// A master reads the memory from an informer's cache (NewFromInformer): a
// report looks its disks up by key and by the legacy forms they refine
// (Candidates), and the check every sync makes (Check) asks the apiserver
// for one entry and reads what the cache's events keep (synced, entries that
// do not parse, the count); neither lists the memory. The store's own
// creates stand in front of the cache until its watch shows them. A store
// made with New reads the apiserver each time (tests, tools).
//
// A master that finds the legacy ConfigMap (LegacyConfigMapName) in its
// namespace moves every entry into UnwipedDisks, labelled with its old key
// (LabelLegacyKey, which Forget also accepts), then deletes the ConfigMap;
// an entry that does not parse moves nothing and fails the master closed.
package unwiped
