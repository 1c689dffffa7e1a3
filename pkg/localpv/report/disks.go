package report

import (
	"fmt"
	"strings"

	"github.com/nodeplug/nodeplug/pkg/localpv/identity"
)

// MaxDisks bounds the disks listed in a report's inventory; DisksTotal
// counts them all.
const MaxDisks = 64

// MaxDiskIDs bounds the /dev/disk/by-id link names listed per disk. The
// inventory keeps a disk's identity links first; Decode drops the names
// beyond it.
const MaxDiskIDs = 8

// Signatures a probe reports besides a partition table or file system name.
const (
	// SignatureNone means the first sectors were read and hold no known
	// partition table or file system signature.
	SignatureNone = "none"
	// SignatureUnknown means the device could not be read.
	SignatureUnknown = "unknown"
)

// Disk is one whole block device as the node's sysfs and udev links show
// it. Every string is as the kernel reports it, with surrounding blanks
// removed; the master sanitises what it copies into labels.
type Disk struct {
	// Name is the kernel name, e.g. sda, nvme0n1, vdb.
	Name string `json:"n"`
	// Size in bytes.
	Size int64 `json:"c"`
	// Rotational is the kernel's queue/rotational flag.
	Rotational bool `json:"rot,omitempty"`
	// Removable and ReadOnly are the kernel's flags of the same names.
	Removable bool   `json:"rm,omitempty"`
	ReadOnly  bool   `json:"ro,omitempty"`
	Model     string `json:"model,omitempty"`
	Vendor    string `json:"vendor,omitempty"`
	Serial    string `json:"serial,omitempty"`
	// WWN is the world wide name (naa., eui. or nguid. form) when the
	// device has one.
	WWN string `json:"wwn,omitempty"`
	// IDs are the names of the disk's links in /dev/disk/by-id (or the
	// class's directory of stable links), sorted: at most MaxDiskIDs of
	// them, its identity links first when it has more.
	IDs []string `json:"ids,omitempty"`
	// Partitions counts the kernel's partitions of the disk.
	Partitions int `json:"parts,omitempty"`
	// Holders counts the devices stacked on it (device-mapper, md).
	Holders int `json:"holders,omitempty"`
	// Stacked is set for a device built on others (device-mapper, md):
	// not a disk of its own.
	Stacked bool `json:"stacked,omitempty"`
	// Signature is the partition table or file system type found in the
	// first sectors (gpt, dos, ext4, xfs, ...), SignatureNone, or
	// SignatureUnknown when the device could not be read.
	Signature string `json:"sig,omitempty"`
	// Busy is set when the device could not be opened exclusively
	// (O_EXCL): something holds it (a mount, md, device-mapper, another
	// exclusive opener).
	Busy bool `json:"busy,omitempty"`
}

// Unused reports whether the disk holds no partition, no stacked device and
// no signature, as far as the probe could tell.
func (d *Disk) Unused() bool {
	return d.Partitions == 0 && d.Holders == 0 && !d.Busy && d.Signature == SignatureNone
}

func checkDisks(r *Report) error {
	if len(r.Disks) > MaxDisks {
		return fmt.Errorf("%d disks exceed %d", len(r.Disks), MaxDisks)
	}
	for i := range r.Disks {
		if err := checkDisk(&r.Disks[i]); err != nil {
			return fmt.Errorf("disk %d: %w", i, err)
		}
	}
	for _, c := range r.Classes {
		for _, v := range c.Volumes {
			if err := checkVolumeIdentity(v.ID, v.Dev, v.Whole); err != nil {
				return fmt.Errorf("class %q volume %q: %w", c.Name, v.Name, err)
			}
			for _, d := range []*Disk{v.Disk, v.Use} {
				if d == nil {
					continue
				}
				if err := checkDisk(d); err != nil {
					return fmt.Errorf("class %q volume %q: %w", c.Name, v.Name, err)
				}
			}
		}
	}
	if len(r.Held) > MaxHeld {
		return fmt.Errorf("%d held paths exceed %d", len(r.Held), MaxHeld)
	}
	if r.HeldOmitted < 0 {
		return fmt.Errorf("negative count of omitted held paths %d", r.HeldOmitted)
	}
	for _, h := range r.Held {
		if err := checkVolumeIdentity(h.ID, h.Dev, h.Whole); err != nil {
			return fmt.Errorf("held path %q: %w", h.Path, err)
		}
	}
	return nil
}

// checkVolumeIdentity checks the identity and device names a node reports.
func checkVolumeIdentity(id identity.ID, devs ...string) error {
	if err := id.Valid(); err != nil {
		return err
	}
	for _, dev := range devs {
		if len(dev) > 64 || strings.ContainsAny(dev, "/\x00 ") {
			return fmt.Errorf("bad device name %q", dev)
		}
	}
	return nil
}

// checkDisk checks a disk and drops its IDs beyond MaxDiskIDs: a disk with
// many links loses the extra names, not the node's whole report.
func checkDisk(d *Disk) error {
	if d.Name == "" {
		return fmt.Errorf("disk name is empty")
	}
	if d.Size < 0 {
		return fmt.Errorf("disk %s has a negative size", d.Name)
	}
	if len(d.IDs) > MaxDiskIDs {
		d.IDs = d.IDs[:MaxDiskIDs]
	}
	return nil
}
