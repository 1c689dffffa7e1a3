// Package discovery is the node-side work of a discovery Job: it lists the
// first-level entries of each class's directory and reports which of them are
// publishable volumes, with their sizes. It never follows a symlink out of a
// class directory except to a block device under /dev, and it never writes.
//
// The watcher uses the same scan, without sizes, to compute its view.
package discovery
