package identity

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// KindPartition is a partition: its start and size on a whole disk, and the
// whole disk's identity. It is as strong as the disk's.
const KindPartition = "part"

// Partition returns the identity of a partition of a disk with identity
// disk, or the unknown identity when the disk's is unknown.
func Partition(disk ID, start, size int64) ID {
	if disk == "" {
		return ""
	}
	return ID(KindPartition + ":" + strconv.FormatInt(start, 10) + ":" + strconv.FormatInt(size, 10) + ":" + esc(string(disk)))
}

// wwnPrefixes are the forms of a world wide name in the kernel's wwid
// attribute that name one device; the others (t10. is vendor, model and
// serial; uuid. and nvme. are NVMe namespaces, see Attributes.ID) are not
// reported as a WWN.
var wwnPrefixes = []string{"naa.", "eui.", "nguid."}

// Attributes are the identifying sysfs attributes of a block device.
type Attributes struct {
	// Name is the kernel name (sdb, nvme0n1, sdb1, loop3).
	Name string
	// Size in bytes.
	Size int64
	// WWN, Model, Serial as the device reports them (WWN only in the
	// naa., eui. and nguid. forms).
	WWN, Model, Serial string
	// WWID is the kernel's wwid attribute in any form.
	WWID string
	// Namespace is set for an NVMe namespace.
	Namespace *NVMeNamespace
}

// NVMeNamespace holds what names an NVMe namespace, as sysfs gives it.
type NVMeNamespace struct {
	// NSID is the namespace's number on its controller.
	NSID string
	// UUID, NGUID and EUI64 are the namespace's own identifiers (empty when
	// it reports none or all zeros).
	UUID, NGUID, EUI64 string
	// Address is the controller's address on its bus (PCI), which tells
	// two controllers with one placeholder serial apart on one machine.
	Address string
}

// ReadAttributes reads the identifying attributes of the block device whose
// sysfs directory is dir (such as /sys/block/sdb).
func ReadAttributes(dir string) (Attributes, error) {
	sectors, err := strconv.ParseInt(readAttr(filepath.Join(dir, "size")), 10, 64)
	if err != nil || sectors < 0 || sectors > 1<<53 {
		return Attributes{}, fmt.Errorf("failed to read the size of %s", dir)
	}
	a := Attributes{Name: filepath.Base(dir), Size: sectors * 512}
	a.Model = readAttr(filepath.Join(dir, "device", "model"))
	a.Serial = firstOf(readAttr(filepath.Join(dir, "serial")), readAttr(filepath.Join(dir, "device", "serial")),
		vpdSerial(filepath.Join(dir, "device", "vpd_pg80")))
	a.WWID = firstOf(readAttr(filepath.Join(dir, "wwid")), readAttr(filepath.Join(dir, "device", "wwid")))
	for _, p := range wwnPrefixes {
		if strings.HasPrefix(a.WWID, p) {
			a.WWN = a.WWID
		}
	}
	a.Namespace = readNamespace(dir, a.WWID)
	return a, nil
}

// ID returns the identity of a whole disk with these attributes: its WWN
// when it has one (an NVMe namespace with an NGUID or EUI-64 has one), with
// its serial for a SCSI NAA WWN, which arrays give several LUNs; an
// NVMe namespace by its controller, size and namespace (UUID, or number);
// another disk by its serial with model and size; else unknown.
func (a Attributes) ID() ID {
	switch {
	case strings.HasPrefix(a.WWN, "naa.") && !Placeholder(a.Serial):
		return WWNSerial(a.WWN, a.Serial)
	case a.WWN != "":
		return WWN(a.WWN)
	case a.Namespace != nil:
		return NVMe(a.Model, a.Serial, a.Size, *a.Namespace)
	case a.Serial != "":
		return Serial(a.Model, a.Serial, a.Size)
	}
	return ""
}

// Device returns the identity and kernel name of the block device node at
// devPath, read from sysfs below sysDir (default /sys), so that it needs no
// access to the device itself: a whole disk by WWN or serial, a loop device
// by its backing file, a partition by its place on its disk. The identity is
// unknown for a device that reports none.
func Device(sysDir, devPath string) (ID, string, error) {
	major, minor, err := deviceNumber(devPath)
	if err != nil {
		return "", "", err
	}
	return deviceByNumber(sysDir, major, minor)
}

// deviceByNumber is Device for the block device major:minor.
func deviceByNumber(sysDir string, major, minor uint32) (ID, string, error) {
	if sysDir == "" {
		sysDir = "/sys"
	}
	dir, err := filepath.EvalSymlinks(filepath.Join(sysDir, "dev", "block", fmt.Sprintf("%d:%d", major, minor)))
	if err != nil {
		return "", "", fmt.Errorf("failed to find block device %d:%d in sysfs: %w", major, minor, err)
	}
	name := filepath.Base(dir)
	if _, err := os.Stat(filepath.Join(dir, "partition")); err == nil {
		disk, err := wholeDisk(sysDir, filepath.Dir(dir))
		if err != nil {
			return "", name, err
		}
		start, err1 := strconv.ParseInt(readAttr(filepath.Join(dir, "start")), 10, 64)
		sectors, err2 := strconv.ParseInt(readAttr(filepath.Join(dir, "size")), 10, 64)
		if err := errors.Join(err1, err2); err != nil {
			return "", name, fmt.Errorf("failed to read partition %s: %w", name, err)
		}
		return Partition(disk, start*512, sectors*512), name, nil
	}
	id, err := wholeDisk(sysDir, dir)
	return id, name, err
}

// WholeDisk returns the identity of the whole disk with kernel name name
// (such as sdb or nvme0n2) from sysfs below sysDir (default /sys).
func WholeDisk(sysDir, name string) (ID, error) {
	if sysDir == "" {
		sysDir = "/sys"
	}
	return wholeDisk(sysDir, filepath.Join(sysDir, "block", name))
}

func wholeDisk(sysDir, dir string) (ID, error) {
	name := filepath.Base(dir)
	if strings.HasPrefix(name, "loop") {
		return LoopDevice(sysDir, name), nil
	}
	a, err := ReadAttributes(dir)
	if err != nil {
		return "", err
	}
	return a.ID(), nil
}

// vpdSerial returns the unit serial number of a SCSI VPD page 0x80: a
// four-byte header whose last two bytes are the length, then the serial.
func vpdSerial(path string) string {
	b, err := os.ReadFile(path)
	if err != nil || len(b) < 4 || b[1] != 0x80 {
		return ""
	}
	n := int(b[2])<<8 | int(b[3])
	if 4+n > len(b) {
		return ""
	}
	return strings.TrimSpace(strings.Trim(string(b[4:4+n]), "\x00"))
}

func firstOf(values ...string) string {
	for _, v := range values {
		if v != "" {
			return v
		}
	}
	return ""
}
