// Package discovery is the node-side work of a discovery Job: it lists the
// first-level entries of each class's directory and reports which of them are
// publishable volumes, with their sizes and what each leads to now (its
// identity; a block entry's device, a directory's file system device, and
// the whole disk of either when it is a partition). A new block entry of a
// class without a disk selector is probed like a selected disk (ProbeUse),
// so that the master publishes no device in use. It never follows a symlink
// out of a class directory except to a block device under /dev, and it
// never writes.
//
// It also takes the node's disk inventory (Inventory): every whole disk of
// sysfs with its size, rotational flag, model, vendor, serial, WWN,
// partitions, holders and /dev/disk/by-id links. When a class has a disk
// selector, the disks a selector could choose (config.Selectable, and no
// partitions or holders: a multipath member is never read) are probed: an O_EXCL open tells whether one is in use, and its first and last
// bytes, then udev's record, name what it holds (signatures.go). Each probe
// is bounded in time. A class with a disk selector reports, instead of its
// directory's entries, the disks whose properties match, each under its
// preferred identity link (SelectDisks, links.go).
//
// The master may pass the paths of the node's other local PVs (HeldPath):
// discovery reports what each leads to (ResolveHeld), and counts those
// beyond report.MaxHeld so that the master never forgets them.
//
// The watcher uses the same scan, without sizes or identities, to compute its
// view.
package discovery
