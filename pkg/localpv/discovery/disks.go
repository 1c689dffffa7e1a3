package discovery

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"k8s.io/klog/v2"

	"github.com/nodeplug/nodeplug/pkg/localpv/report"
)

// DefaultByIDDir is where udev keeps the stable links of disks.
const DefaultByIDDir = "/dev/disk/by-id"

// wwnPrefixes are the forms of a world wide name the kernel's wwid
// attribute uses; other forms (t10.) are vendor, model and serial.
var wwnPrefixes = []string{"naa.", "eui.", "nguid."}

// Inventory reads the whole block devices of a node from sysfs, their
// /dev/disk/by-id links, and the first sectors of each device. Its fields
// are the roots, so that tests read recorded trees.
type Inventory struct {
	// SysDir is the sysfs root; default /sys.
	SysDir string
	// DevDir holds the device nodes, read for signatures; default /dev.
	DevDir string
	// ByIDDir holds the stable links; default /dev/disk/by-id.
	ByIDDir string
}

// Disks returns every whole disk of SysDir/block with a non-zero size,
// sorted by name. A disk whose attributes cannot be read is left out and
// logged; only an unreadable SysDir/block fails.
func (inv *Inventory) Disks(ctx context.Context) ([]report.Disk, error) {
	logger := klog.FromContext(ctx)
	blockDir := filepath.Join(inv.sysDir(), "block")
	dirents, err := os.ReadDir(blockDir)
	if err != nil {
		return nil, fmt.Errorf("failed to list block devices in %s: %w", blockDir, err)
	}
	// A node without udev has no by-id directory: its disks have no IDs.
	links, _ := LinksByDevice(inv.byIDDir())
	var out []report.Disk
	for _, d := range dirents {
		disk, err := inv.disk(d.Name())
		if err != nil {
			logger.V(2).Info("Skipping unreadable block device", "device", d.Name(), "err", err)
			continue
		}
		if disk.Size == 0 {
			continue
		}
		disk.IDs = links[disk.Name]
		out = append(out, disk)
	}
	slices.SortFunc(out, func(a, b report.Disk) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

func (inv *Inventory) disk(name string) (report.Disk, error) {
	dir := filepath.Join(inv.sysDir(), "block", name)
	sectors, err := readInt(filepath.Join(dir, "size"))
	if err != nil {
		return report.Disk{}, err
	}
	if sectors < 0 || sectors > 1<<53 {
		return report.Disk{}, fmt.Errorf("size of %s out of range", name)
	}
	d := report.Disk{Name: name, Size: sectors * 512}
	if d.Size == 0 {
		return d, nil
	}
	d.Rotational = readFlag(filepath.Join(dir, "queue", "rotational"))
	d.Removable = readFlag(filepath.Join(dir, "removable"))
	d.ReadOnly = readFlag(filepath.Join(dir, "ro"))
	d.Model = readAttr(filepath.Join(dir, "device", "model"))
	d.Vendor = readAttr(filepath.Join(dir, "device", "vendor"))
	d.Serial = firstAttr(readAttr(filepath.Join(dir, "serial")), readAttr(filepath.Join(dir, "device", "serial")),
		vpdSerial(filepath.Join(dir, "device", "vpd_pg80")))
	d.WWN = wwn(firstAttr(readAttr(filepath.Join(dir, "wwid")), readAttr(filepath.Join(dir, "device", "wwid"))))
	d.Partitions = countPartitions(dir)
	d.Holders = countEntries(filepath.Join(dir, "holders"))
	d.Stacked = countEntries(filepath.Join(dir, "slaves")) > 0
	d.Signature, err = ProbeSignature(filepath.Join(inv.devDir(), name))
	if err != nil {
		d.Signature = report.SignatureUnknown
	}
	return d, nil
}

// LinksByDevice maps the kernel name of each device that a link in dir
// resolves to onto the sorted names of those links. Entries that are not
// links, or that do not resolve, are ignored.
func LinksByDevice(dir string) (map[string][]string, error) {
	dirents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("failed to read link directory %s: %w", dir, err)
	}
	out := map[string][]string{}
	for _, d := range dirents {
		if d.Type()&os.ModeSymlink == 0 {
			continue
		}
		target, err := filepath.EvalSymlinks(filepath.Join(dir, d.Name()))
		if err != nil {
			continue
		}
		dev := filepath.Base(target)
		out[dev] = append(out[dev], d.Name())
	}
	for _, names := range out {
		slices.Sort(names)
	}
	return out, nil
}

func countPartitions(dir string) int {
	dirents, err := os.ReadDir(dir)
	if err != nil {
		return 0
	}
	n := 0
	for _, d := range dirents {
		if _, err := os.Stat(filepath.Join(dir, d.Name(), "partition")); err == nil {
			n++
		}
	}
	return n
}

func countEntries(dir string) int {
	dirents, err := os.ReadDir(dir)
	if err != nil {
		return 0
	}
	return len(dirents)
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

func wwn(wwid string) string {
	for _, p := range wwnPrefixes {
		if strings.HasPrefix(wwid, p) {
			return wwid
		}
	}
	return ""
}

func firstAttr(values ...string) string {
	for _, v := range values {
		if v != "" {
			return v
		}
	}
	return ""
}

func readAttr(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(strings.Trim(string(b), "\x00"))
}

func readFlag(path string) bool { return readAttr(path) == "1" }

func readInt(path string) (int64, error) {
	v, err := strconv.ParseInt(readAttr(path), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("failed to read %s: %w", path, err)
	}
	return v, nil
}

func (inv *Inventory) sysDir() string { return orDefault(inv.SysDir, "/sys") }
func (inv *Inventory) devDir() string { return orDefault(inv.DevDir, "/dev") }
func (inv *Inventory) byIDDir() string {
	return orDefault(inv.ByIDDir, DefaultByIDDir)
}

func orDefault(v, def string) string {
	if v != "" {
		return v
	}
	return def
}
