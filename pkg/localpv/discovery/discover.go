package discovery

import (
	"context"
	"fmt"

	"k8s.io/klog/v2"

	"github.com/nodeplug/nodeplug/pkg/localpv/report"
)

// Discoverer produces the report of one discovery run.
type Discoverer interface {
	// Discover scans every class, and resolves the held paths, and returns
	// the node's report. A class whose directory cannot be read carries an
	// error instead of volumes; only an unreadable mount table fails the
	// whole run.
	Discover(ctx context.Context, node string, classes []ClassSpec, held []HeldPath) (*report.Report, error)
}

type discoverer struct {
	scanner       *Scanner
	mountInfoPath string
}

var _ Discoverer = &discoverer{}

// NewDiscoverer returns a Discoverer reading the given mountinfo file
// (normally SelfMountInfo).
func NewDiscoverer(scanner *Scanner, mountInfoPath string) Discoverer {
	return &discoverer{scanner: scanner, mountInfoPath: mountInfoPath}
}

func (d *discoverer) Discover(ctx context.Context, node string, classes []ClassSpec, held []HeldPath) (*report.Report, error) {
	logger := klog.FromContext(ctx)
	mps, err := MountPoints(d.mountInfoPath)
	if err != nil {
		return nil, err
	}
	r := &report.Report{Version: report.Version, Node: node, Held: d.scanner.ResolveHeld(held)}
	r.HeldOmitted = max(0, len(held)-len(r.Held))
	inv := d.inventory(classes)
	disks, err := inv.Disks(ctx)
	if err != nil {
		logger.Error(err, "Disk inventory unreadable")
	}
	r.DisksTotal = len(disks)
	r.Disks = disks[:min(len(disks), report.MaxDisks)]
	claimed := map[string]string{}
	var all [][]Entry
	for _, spec := range classes {
		c := report.Class{Name: spec.Name}
		var entries []Entry
		var scanErr error
		switch {
		case spec.DiskSelector != nil && err != nil:
			scanErr = fmt.Errorf("disk inventory unreadable: %w", err)
		case spec.DiskSelector != nil:
			entries, scanErr = d.scanner.SelectDisks(ctx, spec, disks, claimed)
		default:
			entries, scanErr = d.scanner.ScanClass(spec, mps, true)
			d.scanner.ProbeUse(ctx, entries)
		}
		if scanErr != nil {
			logger.Error(scanErr, "Class directory unreadable", "class", spec.Name)
			c.Error = scanErr.Error()
		}
		all = append(all, entries)
		r.Classes = append(r.Classes, c)
	}
	d.scanner.markSharedDirectories(all)
	for i := range r.Classes {
		addEntries(ctx, &r.Classes[i], all[i])
	}
	return r, nil
}

// inventory returns the node's Inventory: it probes the disks a selector
// could choose when a class has a selector, loop devices when one of them
// asks for loop devices.
func (d *discoverer) inventory(classes []ClassSpec) *Inventory {
	inv := &Inventory{SysDir: d.scanner.SysDir, DevDir: d.scanner.DevDir}
	for _, c := range classes {
		if c.DiskSelector != nil {
			inv.Probe = true
			inv.LoopDevices = inv.LoopDevices || c.DiskSelector.LoopDevices
		}
	}
	return inv
}

func addEntries(ctx context.Context, c *report.Class, entries []Entry) {
	logger := klog.FromContext(ctx)
	for _, e := range entries {
		if e.Skip != "" {
			c.SkippedTotal++
			if len(c.Skipped) < report.MaxSkipped {
				c.Skipped = append(c.Skipped, report.Skipped{Name: e.Name, Reason: e.Skip})
			}
			logger.V(2).Info("Skipping entry", "class", c.Name, "entry", e.Name, "reason", e.Skip)
			continue
		}
		if e.IDErr != nil {
			logger.V(2).Info("Identity of a volume unreadable", "class", c.Name, "entry", e.Name, "err", e.IDErr)
		}
		c.Volumes = append(c.Volumes, report.Volume{Name: e.Name, Kind: e.Kind, Capacity: e.Capacity, Disk: e.Disk,
			ID: e.ID, Dev: e.Dev, Whole: e.Whole, Use: e.Use})
	}
}
