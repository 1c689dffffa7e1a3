// Package cleanup is the node-side work of a cleanup Job: it wipes one volume
// so that the next tenant finds nothing of the previous one. A filesystem
// volume loses its contents but keeps its mount point; a block device is
// handed to the class's configured command.
//
// The request comes from the master, but the Job re-checks it on the node:
// the path must be a direct child of the class directory, a filesystem
// volume must still be a mount point (a missing disk must not be reported as
// wiped), and a block entry must resolve to a block device under /dev.
package cleanup
