package discovery

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"k8s.io/klog/v2"

	"github.com/nodeplug/nodeplug/pkg/localpv/config"
	"github.com/nodeplug/nodeplug/pkg/localpv/identity"
	"github.com/nodeplug/nodeplug/pkg/localpv/report"
)

// DefaultByIDDir is where udev keeps the stable links of disks.
const DefaultByIDDir = "/dev/disk/by-id"

// Inventory reads the whole block devices of a node from sysfs, their
// /dev/disk/by-id links, and, for the disks a selector could choose,
// whether they are in use and what they hold. Its fields are the roots and
// seams, so that tests read recorded trees.
type Inventory struct {
	// SysDir is the sysfs root; default /sys.
	SysDir string
	// DevDir holds the device nodes, read for signatures; default /dev.
	DevDir string
	// ByIDDir holds the stable links; default /dev/disk/by-id.
	ByIDDir string
	// UdevDataDir is udev's database of devices (b<major>:<minor> files);
	// default DefaultUdevDataDir. When it cannot be read, the probe alone
	// decides.
	UdevDataDir string
	// Probe asks for the disks a selector could choose to be probed (some
	// class has a disk selector); other disks get no signature.
	Probe bool
	// LoopDevices makes loop devices selectable, and probed (some class's
	// selector has loopDevices).
	LoopDevices bool
	// ProbeTimeout bounds each device's probe; default DefaultProbeTimeout.
	ProbeTimeout time.Duration
	// Open opens a device for the probe; default OpenDevice.
	Open Opener
}

// Disks returns every whole disk of SysDir/block with a non-zero size,
// sorted by name, with at most report.MaxDiskIDs links each (its identity
// links first). A disk whose attributes cannot be read is left out and
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
		disk.IDs = capLinks(links[disk.Name])
		// A disk with partitions or holders is never chosen, so it is not
		// read: a multipath member behind a blocked path would hang the read.
		if inv.Probe && !disk.Stacked && disk.Partitions == 0 && disk.Holders == 0 && config.Selectable(disk.Name, inv.LoopDevices) {
			inv.probe(ctx, &disk)
		}
		out = append(out, disk)
	}
	slices.SortFunc(out, func(a, b report.Disk) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

func (inv *Inventory) disk(name string) (report.Disk, error) {
	dir := filepath.Join(inv.sysDir(), "block", name)
	a, err := identity.ReadAttributes(dir)
	if err != nil {
		return report.Disk{}, err
	}
	d := report.Disk{Name: name, Size: a.Size, Model: a.Model, Serial: a.Serial, WWN: a.WWN}
	if d.Size == 0 {
		return d, nil
	}
	d.Rotational = readFlag(filepath.Join(dir, "queue", "rotational"))
	d.Removable = readFlag(filepath.Join(dir, "removable"))
	d.ReadOnly = readFlag(filepath.Join(dir, "ro"))
	d.Vendor = readAttr(filepath.Join(dir, "device", "vendor"))
	d.Partitions = countPartitions(dir)
	d.Holders = countEntries(filepath.Join(dir, "holders"))
	d.Stacked = countEntries(filepath.Join(dir, "slaves")) > 0
	return d, nil
}

// probe fills the disk's Busy and Signature: the probe's finding, else
// what udev recorded, else SignatureUnknown when the probe failed.
func (inv *Inventory) probe(ctx context.Context, d *report.Disk) {
	r := probeWithin(ctx, inv.opener(), filepath.Join(inv.devDir(), d.Name), inv.probeTimeout())
	d.Busy, d.Signature = r.busy, r.signature
	if r.err != nil {
		klog.FromContext(ctx).V(2).Info("Disk unreadable", "disk", d.Name, "err", r.err)
	}
	if d.Signature == "" || d.Signature == report.SignatureNone {
		if u := udevSignature(inv.udevDataDir(), readAttr(filepath.Join(inv.sysDir(), "block", d.Name, "dev"))); u != "" {
			d.Signature = u
		}
	}
	if d.Signature == "" {
		d.Signature = report.SignatureUnknown
	}
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

func readAttr(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(strings.Trim(string(b), "\x00"))
}

func readFlag(path string) bool { return readAttr(path) == "1" }

func (inv *Inventory) sysDir() string { return orDefault(inv.SysDir, "/sys") }
func (inv *Inventory) devDir() string { return orDefault(inv.DevDir, "/dev") }
func (inv *Inventory) byIDDir() string {
	return orDefault(inv.ByIDDir, DefaultByIDDir)
}
func (inv *Inventory) udevDataDir() string { return orDefault(inv.UdevDataDir, DefaultUdevDataDir) }

func (inv *Inventory) probeTimeout() time.Duration {
	if inv.ProbeTimeout > 0 {
		return inv.ProbeTimeout
	}
	return DefaultProbeTimeout
}

func (inv *Inventory) opener() Opener {
	if inv.Open != nil {
		return inv.Open
	}
	return OpenDevice
}

func orDefault(v, def string) string {
	if v != "" {
		return v
	}
	return def
}
