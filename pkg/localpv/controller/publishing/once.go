package publishing

import (
	"net/url"
	"strings"

	"github.com/nodeplug/nodeplug/pkg/localpv/identity"
	"github.com/nodeplug/nodeplug/pkg/localpv/report"
	"github.com/nodeplug/nodeplug/pkg/localpv/validation"
)

// A disk is published once: not under two paths, not as a whole disk and as
// one of its partitions, and not as a block device and as the device a
// directory's file system lives on. Two directories on one file system are
// two volumes (bind mounts of one disk's directories), so the device of a
// directory only conflicts with block devices.

// partitionDisk returns the identity of the whole disk of a partition
// identity (identity.Partition), or "" for any other identity.
func partitionDisk(id identity.ID) identity.ID {
	if id.Kind() != identity.KindPartition {
		return ""
	}
	parts := strings.SplitN(string(id), ":", 4)
	if len(parts) < 4 {
		return ""
	}
	disk, err := url.PathUnescape(parts[3])
	if err != nil {
		return ""
	}
	return identity.ID(disk)
}

// takeID records that who holds the disk, partition or directory id.
func (t *takenDisks) takeID(id identity.ID, who string) {
	if id == "" {
		return
	}
	t.ids[id] = who
	if disk := partitionDisk(id); disk != "" {
		if t.partsOf == nil {
			t.partsOf = map[identity.ID]string{}
		}
		t.partsOf[disk] = who
	}
}

// idHolder returns who holds id, its whole disk (id is a partition), or a
// partition of it (id is a whole disk); or "".
func (t *takenDisks) idHolder(id identity.ID) string {
	if id == "" {
		return ""
	}
	if who, ok := t.ids[id]; ok {
		return who
	}
	if disk := partitionDisk(id); disk != "" {
		if who, ok := t.ids[disk]; ok {
			return who
		}
	}
	return t.partsOf[id]
}

// takeDevice records that who holds the device dev (a partition of whole,
// when whole is set) as a volume of kind: a block device, or the device a
// directory's file system lives on.
func (t *takenDisks) takeDevice(kind report.VolumeKind, dev, whole, who string) {
	if dev == "" {
		return
	}
	if t.fsDevs == nil {
		t.fsDevs, t.blockWholes, t.fsWholes = map[string]string{}, map[string]string{}, map[string]string{}
	}
	devs, wholes := t.devs, t.blockWholes
	if kind == report.KindDirectory {
		devs, wholes = t.fsDevs, t.fsWholes
	}
	devs[dev] = who
	if whole != "" {
		wholes[whole] = who
	}
}

// deviceHolder returns who holds a device that a new volume of kind on dev
// (a partition of whole) would share a disk with, or "": dev itself or its
// whole disk held as a block device, or, dev being a whole disk, one of its
// partitions held as one. A new block volume also conflicts with a
// directory's file system on any of these. Two partitions of one disk are
// two volumes.
func (t *takenDisks) deviceHolder(kind report.VolumeKind, dev, whole string) string {
	if dev == "" {
		return ""
	}
	devs, wholes := []map[string]string{t.devs}, []map[string]string{t.blockWholes}
	if kind != report.KindDirectory {
		devs, wholes = append(devs, t.fsDevs), append(wholes, t.fsWholes)
	}
	for _, m := range devs {
		for _, d := range []string{dev, whole} {
			if who, ok := m[d]; ok && d != "" {
				return who
			}
		}
	}
	for _, m := range wholes {
		if who, ok := m[dev]; ok {
			return who
		}
	}
	return ""
}

// holder returns who already holds a volume's disk, or "".
func (t *takenDisks) holder(v validation.Volume) string {
	if who := t.idHolder(v.Volume.ID); who != "" {
		return who
	}
	return t.deviceHolder(v.Volume.Kind, v.Volume.Dev, v.Volume.Whole)
}

// add records that who now holds a volume's disk.
func (t *takenDisks) add(v validation.Volume, who string) {
	t.takeID(v.Volume.ID, who)
	t.takeDevice(v.Volume.Kind, v.Volume.Dev, v.Volume.Whole, who)
}
