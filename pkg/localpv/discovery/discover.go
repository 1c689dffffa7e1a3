package discovery

import (
	"context"
	"fmt"

	"k8s.io/klog/v2"

	"github.com/nodeplug/nodeplug/pkg/localpv/report"
)

// Discoverer produces the report of one discovery run.
type Discoverer interface {
	// Discover scans every class and returns the node's report. A class
	// whose directory cannot be read carries an error instead of volumes;
	// only an unreadable mount table fails the whole run.
	Discover(ctx context.Context, node string, classes []ClassSpec) (*report.Report, error)
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

func (d *discoverer) Discover(ctx context.Context, node string, classes []ClassSpec) (*report.Report, error) {
	logger := klog.FromContext(ctx)
	mps, err := MountPoints(d.mountInfoPath)
	if err != nil {
		return nil, err
	}
	r := &report.Report{Version: report.Version, Node: node}
	inv := &Inventory{SysDir: d.scanner.SysDir, DevDir: d.scanner.DevDir}
	disks, err := inv.Disks(ctx)
	if err != nil {
		logger.Error(err, "Disk inventory unreadable")
	}
	r.DisksTotal = len(disks)
	r.Disks = disks[:min(len(disks), report.MaxDisks)]
	claimed := map[string]string{}
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
		}
		if scanErr != nil {
			logger.Error(scanErr, "Class directory unreadable", "class", spec.Name)
			c.Error = scanErr.Error()
		}
		addEntries(ctx, &c, entries)
		r.Classes = append(r.Classes, c)
	}
	return r, nil
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
		c.Volumes = append(c.Volumes, report.Volume{Name: e.Name, Kind: e.Kind, Capacity: e.Capacity, Disk: e.Disk})
	}
}
