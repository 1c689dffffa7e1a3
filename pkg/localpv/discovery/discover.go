package discovery

import (
	"context"

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
	for _, spec := range classes {
		c := report.Class{Name: spec.Name}
		entries, err := d.scanner.ScanClass(spec, mps, true)
		if err != nil {
			logger.Error(err, "Class directory unreadable", "class", spec.Name)
			c.Error = err.Error()
		}
		for _, e := range entries {
			if e.Skip != "" {
				c.SkippedTotal++
				if len(c.Skipped) < report.MaxSkipped {
					c.Skipped = append(c.Skipped, report.Skipped{Name: e.Name, Reason: e.Skip})
				}
				logger.V(2).Info("Skipping entry", "class", spec.Name, "entry", e.Name, "reason", e.Skip)
				continue
			}
			c.Volumes = append(c.Volumes, report.Volume{Name: e.Name, Kind: e.Kind, Capacity: e.Capacity})
		}
		r.Classes = append(r.Classes, c)
	}
	return r, nil
}
