// Package wipe holds the cleaner programs of the provisioner image. They are
// installed at the paths of the upstream sig-storage-local-static-provisioner
// (/scripts/shred.sh, /scripts/dd_zero.sh, /scripts/blkdiscard.sh,
// /scripts/quick_reset.sh and /scripts/fsclean.sh), as links to the
// local-volume-provisioner binary, which runs Main when it is started under
// one of these names. An upstream blockCleanerCommand such as
// ["/scripts/shred.sh", "2"] therefore works unchanged.
//
// The contract is upstream's: a block cleaner takes the device from the
// LOCAL_PV_BLKDEVICE environment variable, fsclean.sh takes the directory
// from LOCAL_PV_FILESYSTEM. Every program refuses anything else: a missing
// variable, a path that is not a block device (or not a directory), and a
// device that is in use (mounted or claimed: block devices are opened with
// O_EXCL). A program only ever writes to the device it was given, or below
// the directory it was given, and exits non-zero with a message naming the
// program, the path and the cause when it could not finish.
//
// A block cleaner may also be handed the device as an open descriptor:
// LOCAL_PV_BLKDEVICE=/proc/self/fd/N (or /dev/fd/N). The cleanup Job does so
// (fd 3): it opens the device once, exclusively, checks its identity on that
// descriptor and passes it, so that the wipe reaches the device that was
// checked even if its name leads to another disk by then. The programs
// write through such a descriptor and never reopen a path; a shell script
// that opens $LOCAL_PV_BLKDEVICE opens the same device through the link.
//
// CleanDirectory, which fsclean.sh runs, is also how the cleanup Job empties
// a Filesystem volume (CleanDirectoryFile, from the directory it checked)
// and how the default class's CSI driver deletes its volumes, so the
// project has one directory cleaner: it refuses a directory with a file
// system mounted below it, and while it removes it never follows a symlink
// and never crosses onto another file system or mount.
//
// The programs are written in Go rather than as shell scripts so that they
// need nothing from the image but the binary (busybox has no wipefs) and so
// that what they write can be tested against real loop devices.
package wipe
