// Package cleanup is the node-side work of a cleanup Job: it wipes one volume
// so that the next tenant finds nothing of the previous one. A filesystem
// volume loses its contents but keeps its mount point (package wipe's
// CleanDirectory, which never crosses into a file system mounted below it);
// a block device is handed to the class's configured command.
//
// The request comes from the master, but the Job re-checks it on the node
// before it writes anything: the path must be a direct child of the class
// directory; the node must be the machine the PV recorded (machine ID and
// system UUID); a filesystem volume must still be a mount point (a missing
// disk must not be reported as wiped) and a block entry must resolve to a
// block device under /dev; and what the path leads to must be the disk the
// PV recorded (package identity). A Checker does the identity checks; on a
// mismatch nothing is wiped and Clean returns a *MismatchError, which the
// Job reports with its own termination message and exit code.
//
// The volume is opened once and the identity is read from that descriptor,
// not from a path: a directory is emptied by walking from the descriptor
// that was checked, and a block device, opened exclusively (O_EXCL) for the
// check, is handed to the cleaner command as fd 3 (LOCAL_PV_BLKDEVICE is
// /proc/self/fd/3). A disk swapped under the path, or a device node
// re-created for another disk, after the check is never written to.
package cleanup
