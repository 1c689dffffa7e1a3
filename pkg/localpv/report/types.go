package report

import (
	"fmt"

	"github.com/nodeplug/nodeplug/pkg/localpv/identity"
)

// Version is the report format version written by this package.
const Version = 1

// VolumeKind says what a discovered entry is.
type VolumeKind string

const (
	// KindDirectory is a directory that is a mount point.
	KindDirectory VolumeKind = "d"
	// KindBlock is a block device, or a symlink to one under /dev.
	KindBlock VolumeKind = "b"
)

// Report is the result of one discovery run on one node.
type Report struct {
	// Version is the format version; decoders reject other versions.
	Version int `json:"v"`
	// Node is the node name the discoverer was told it runs on.
	Node string `json:"node"`
	// Classes holds one entry per storage class the Job was asked about.
	Classes []Class `json:"classes"`
	// Disks is the node's inventory of whole block devices, at most
	// MaxDisks of them, sorted by name.
	Disks []Disk `json:"disks,omitempty"`
	// DisksTotal counts every disk, also those left out of Disks.
	DisksTotal int `json:"disksTotal,omitempty"`
	// Held are the other local PVs of the node that the Job was asked to
	// resolve (PVs of other provisioners, installations or classes), at
	// most MaxHeld: what each path leads to now.
	Held []Held `json:"held,omitempty"`
	// HeldOmitted counts the node's other local PVs beyond MaxHeld, which
	// the Job was not asked to resolve: a disk behind one of them cannot
	// be ruled out (see AllHeld).
	HeldOmitted int `json:"heldOmitted,omitempty"`
}

// MaxHeld bounds the held paths of one report.
const MaxHeld = 64

// ErrHeldOmitted is the error of the held entry that AllHeld adds for the
// paths beyond MaxHeld.
const ErrHeldOmitted = "not resolved: discovery resolves at most 64 paths of other local PVs per node"

// AllHeld returns the held paths, and when some were omitted (HeldOmitted)
// one more entry with ErrHeldOmitted that stands for them: never resolved,
// so that a disk behind one of them is not published again.
func (r *Report) AllHeld() []Held {
	if r.HeldOmitted <= 0 {
		return r.Held
	}
	out := append([]Held(nil), r.Held...)
	return append(out, Held{Path: fmt.Sprintf("%d more local PVs", r.HeldOmitted), Error: ErrHeldOmitted})
}

// Held is what the path of a PV the master does not publish leads to.
type Held struct {
	// Path is the PV's path on the host, as the Job was given it.
	Path string `json:"p"`
	// Kind is what the path is, when it was resolved.
	Kind VolumeKind `json:"k,omitempty"`
	// Dev is the kernel name of the block device it resolves to, or for a
	// directory the device its file system lives on, if any.
	Dev string `json:"dev,omitempty"`
	// Whole is the kernel name of the whole disk when Dev is a partition.
	Whole string `json:"whole,omitempty"`
	// ID is the identity of what it leads to (a disk, partition or
	// directory), if known.
	ID identity.ID `json:"id,omitempty"`
	// Error says why the path could not be resolved.
	Error string `json:"error,omitempty"`
}

// Class is the discovery result of one storage class.
type Class struct {
	// Name is the storage class name.
	Name string `json:"name"`
	// Error is set when the class's directory could not be read. Its
	// volumes are then unknown, not absent.
	Error string `json:"error,omitempty"`
	// Volumes are the usable entries, sorted by name.
	Volumes []Volume `json:"volumes,omitempty"`
	// Skipped are entries that matched the name pattern but cannot be
	// published, at most MaxSkipped of them.
	Skipped []Skipped `json:"skipped,omitempty"`
	// SkippedTotal counts all skipped entries.
	SkippedTotal int `json:"skippedTotal,omitempty"`
}

// Volume is one publishable entry.
type Volume struct {
	// Name is the entry's name in the class directory: one path element.
	Name string `json:"n"`
	// Kind is what the entry is.
	Kind VolumeKind `json:"k"`
	// Capacity in bytes.
	Capacity int64 `json:"c"`
	// Disk is set for a disk chosen by a class's disk selector: its
	// properties, which become PV labels.
	Disk *Disk `json:"disk,omitempty"`
	// ID is the identity of what the entry leads to now (package
	// identity); empty when it cannot be known.
	ID identity.ID `json:"id,omitempty"`
	// Dev is, for a block entry, the kernel name of the device it
	// resolves to (sdb, sdb1, loop3), and for a directory the block device
	// its file system lives on (none for tmpfs, btrfs and other file
	// systems whose device number is not a block device's), so that the
	// master sees one disk reached under two paths or as two kinds.
	Dev string `json:"dev,omitempty"`
	// Whole is the kernel name of the whole disk when Dev is a partition,
	// so that a disk and its partitions are never both published.
	Whole string `json:"whole,omitempty"`
	// Use is, for a block entry of a class without a disk selector, how
	// its device is in use (partitions, holders, busy, signature), as
	// discovery probes it; the master publishes a new one only when unused.
	Use *Disk `json:"use,omitempty"`
}

// Skipped is an entry that matched but was not published.
type Skipped struct {
	Name   string `json:"n"`
	Reason string `json:"r"`
}

// MaxSkipped bounds the skipped entries listed per class.
const MaxSkipped = 16
