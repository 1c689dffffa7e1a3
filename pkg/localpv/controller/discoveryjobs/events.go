package discoveryjobs

import (
	"fmt"

	v1 "k8s.io/api/core/v1"

	"github.com/nodeplug/nodeplug/pkg/localpv/metrics"
	"github.com/nodeplug/nodeplug/pkg/localpv/report"
	"github.com/nodeplug/nodeplug/pkg/localpv/validation"
)

// failed reports a failed run and schedules a retry with backoff.
func (r *runner) failed(node *v1.Node, msg string) error {
	metrics.JobFailures.WithLabelValues(metrics.KindDiscovery).Inc()
	r.Recorder.Eventf(node, v1.EventTypeWarning, "DiscoveryFailed", "Discovery Job failed: %s", msg)
	r.retry(node.Name)
	return nil
}

// needsShards runs discovery again at once with the number of containers
// the node's report needs, and keeps that number for the node. Decode only
// accepts requests for more containers than the run had, up to
// report.MaxShards, so a node cannot make this loop.
func (r *runner) needsShards(node *v1.Node, shards int) error {
	r.Recorder.Eventf(node, v1.EventTypeNormal, "DiscoveryResharded",
		"The discovery report needs %d containers; running discovery again with %d", shards, shards)
	r.withNode(node.Name, func(st *nodeState) {
		st.shards = shards
		st.wantDiscovery = true
	})
	return nil
}

// inconsistent handles a report whose shards were scanned from different
// states of the disks: each container of a discovery pod scans on its own,
// and a disk changed between their scans. This is neither a failed Job nor
// a rejected report; discovery runs again after the backoff, which also
// bounds what a node forging such reports can cause.
func (r *runner) inconsistent(node *v1.Node, err error) error {
	r.Recorder.Eventf(node, v1.EventTypeNormal, "DiscoveryRetried", "Disks changed during discovery, running it again: %v", err)
	r.retry(node.Name)
	return nil
}

func (r *runner) reject(node *v1.Node, reason string, err error) error {
	metrics.RejectedReports.WithLabelValues(reason).Inc()
	r.Recorder.Eventf(node, v1.EventTypeWarning, "DiscoveryReportRejected", "Discovery report rejected: %v", err)
	return nil
}

// maxVolumeEvents bounds the per-volume Events of one report.
const maxVolumeEvents = 10

func (r *runner) recordRejections(node *v1.Node, rejected []validation.Rejection) {
	for i, rj := range rejected {
		metrics.RejectedVolumes.WithLabelValues(rj.Reason).Inc()
		if i < maxVolumeEvents {
			r.Recorder.Eventf(node, v1.EventTypeWarning, "VolumeRejected", "Class %s entry %q rejected (%s): %s", rj.Class, rj.Name, rj.Reason, rj.Message)
		}
	}
	if len(rejected) > maxVolumeEvents {
		r.Recorder.Eventf(node, v1.EventTypeWarning, "VolumeRejected", "%d more entries rejected", len(rejected)-maxVolumeEvents)
	}
}

// recordSkipped tells the admin why matching entries got no PV, the most
// common support question of static provisioners.
func (r *runner) recordSkipped(node *v1.Node, rep *report.Report) {
	for _, cl := range rep.Classes {
		if cl.Error != "" {
			r.Recorder.Eventf(node, v1.EventTypeWarning, "ClassDirectoryUnreadable", "Class %s: %s", cl.Name, cl.Error)
		}
		if cl.SkippedTotal == 0 {
			continue
		}
		first := ""
		if len(cl.Skipped) > 0 {
			first = fmt.Sprintf(", e.g. %q: %s", cl.Skipped[0].Name, cl.Skipped[0].Reason)
		}
		r.Recorder.Eventf(node, v1.EventTypeNormal, "VolumesSkipped", "Class %s: %d entries skipped%s", cl.Name, cl.SkippedTotal, first)
	}
}
