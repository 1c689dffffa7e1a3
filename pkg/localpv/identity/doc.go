// Package identity says what a local volume's disk is, as opposed to where
// it is: the identity a PV records when it is published, that discovery
// reports for what a path leads to now, and that a cleanup Job checks on
// the node before it touches a byte.
//
// An identity is a string "<kind>:<fields>". Strong kinds come from the
// device or the file system itself and survive reboots, re-imaging and
// renamed links: a world wide name (wwn), a serial number with model and
// size (serial), a file system UUID with the directory's file handle (fs).
// Weak kinds hold only on one machine: the backing file of a loop device
// (loop), and a directory's file handle on a file system with no UUID (fh).
// Equal identities mean the same disk; only two strong identities of one
// kind can prove two disks different across machines.
package identity
