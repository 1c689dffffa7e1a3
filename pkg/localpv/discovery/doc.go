// Package discovery is the node-side work of a discovery Job: it lists the
// first-level entries of each class's directory and reports which of them are
// publishable volumes, with their sizes. It never follows a symlink out of a
// class directory except to a block device under /dev, and it never writes.
//
// It also takes the node's disk inventory (Inventory): every whole disk of
// sysfs with its size, rotational flag, model, vendor, serial, WWN,
// partitions and holders, its /dev/disk/by-id links, and the partition table
// or file system signature of its first sectors (ProbeSignature). A class
// with a disk selector reports, instead of its directory's entries, the
// disks whose properties match, each under its preferred stable link
// (SelectDisks).
//
// The watcher uses the same scan, without sizes, to compute its view.
package discovery
