// Package identity says what a local volume's disk is, as opposed to where
// it is: the identity a PV records when it is published, that discovery
// reports for what a path leads to now, and that a cleanup Job checks on
// the node before it touches a byte.
//
// An identity is a string "<kind>:<fields>". Strong kinds come from the
// device or the file system itself and survive reboots, re-imaging and
// renamed links: a world wide name (wwn), a serial number with model and
// size (serial, weak when the serial is a placeholder such as GCE's
// nvme_card or zeros), an NVMe namespace by its controller, size and
// namespace UUID or number (nvme), a file system UUID with the directory's
// file handle (fs), a file handle with its device's identity on a file
// system without a UUID (fhdisk, as strong as the device's), a partition
// (part, as strong as its disk's). Weak kinds hold only on one machine: the
// backing file of a loop device (loop), a device number with a file handle
// (fhdev) on a file system with neither a UUID nor a device identity, and a
// directory on the machine's OS file system (osfs: the file system's UUID,
// the file handle and the machine's ID), since every VM cloned from one
// image has the image's UUID and handles. The OS file system is the one
// that holds the host's /etc/machine-id (OSFileSystem: same st_dev, or the
// same UUID for btrfs subvolumes), read at a Job's /host/etc or at /etc.
// Equal identities mean the same disk; only two strong identities of one
// kind can prove two disks different across machines.
//
// A file system's UUID comes from FS_IOC_GETFSUUID (Linux 6.9), else the
// file system's own ioctl (ext4 from 6.0, xfs, btrfs), else the superblock
// on its device, else udev's database; SetUnavailable (or the environment
// variable UnavailableEnv) forces sources off for tests. DirectoryFile and
// DeviceFile read an identity through an open descriptor, so that a caller
// acts on what it checked. DirectoryAs and DirectoryFileAs read a
// directory's identity in the form a record has, where the directory has
// that form: the kubelet, which may read a superblock that unprivileged
// discovery could not, computes the fhdisk discovery recorded instead of
// fs, so the same disk compares Same and another disk still Different.
//
// Older releases wrote fh (a file handle alone, which every ext4 root
// shares) and identified NVMe namespaces by their controller's serial.
// They also recorded a directory on the OS file system as fs. Compare says
// Unknown for fh against anything and for fs against osfs, and Refines
// tells a caller that a current identity is a newer form of such a
// record.
package identity
