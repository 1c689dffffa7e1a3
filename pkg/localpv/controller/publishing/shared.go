package publishing

import (
	"context"
	"fmt"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/nodeplug/nodeplug/pkg/localpv/controller/pvops"
	"github.com/nodeplug/nodeplug/pkg/localpv/controller/pvstate"
	"github.com/nodeplug/nodeplug/pkg/localpv/identity"
	"github.com/nodeplug/nodeplug/pkg/localpv/jobs"
	"github.com/nodeplug/nodeplug/pkg/localpv/report"
	"github.com/nodeplug/nodeplug/pkg/localpv/validation"
)

// sharedIdentities returns the identities that volumes or held paths
// resolving to different devices of one node report.
func sharedIdentities(res *validation.Result, held []report.Held) map[identity.ID][]string {
	devs := map[identity.ID]map[string]string{}
	note := func(id identity.ID, dev, path string) {
		if id == "" || dev == "" {
			return
		}
		if devs[id] == nil {
			devs[id] = map[string]string{}
		}
		devs[id][dev] = path
	}
	for _, v := range res.Accepted {
		note(v.Volume.ID, v.Volume.Dev, v.HostPath)
	}
	for _, h := range held {
		note(h.ID, h.Dev, h.Path)
	}
	out := map[identity.ID][]string{}
	for id, byDev := range devs {
		if len(byDev) > 1 {
			for _, path := range byDev {
				out[id] = append(out[id], path)
			}
			slices.Sort(out[id])
		}
	}
	return out
}

// sharedIdentity reports, with an Event, a volume whose identity another
// device of the node reports too: it tells neither apart, so neither is
// published, and a PV already at its path is left as it is.
func (p *publisher) sharedIdentity(node *v1.Node, v validation.Volume, t *takenDisks) bool {
	paths, ok := t.shared[v.Volume.ID]
	if !ok {
		return false
	}
	p.skipDisk(node, v, "DiskIdentityShared", fmt.Sprintf("its identity (%s) is also reported by another device of the node (paths %s: "+
		"a cloned disk or file system, array LUNs with one WWN, or a placeholder serial), so it tells neither disk apart and "+
		"neither is published; give each disk an identity of its own (a new file system UUID, distinct serials)",
		v.Volume.ID, pvops.Truncate(strings.Join(paths, ", "), 256)))
	return true
}

// refineDisk records the current identity of a PV that records a legacy
// form of it (a bare file handle, an NVMe controller's serial), which
// proved nothing more. A PV being deleted, released or failed keeps its
// record: its cleanup compares Unknown and wipes nothing until an admin
// decides.
func (p *publisher) refineDisk(ctx context.Context, pv *v1.PersistentVolume, id identity.ID) error {
	if !refinable(pv) {
		return nil
	}
	return p.recordDisk(ctx, pv, id)
}

// recordDisk writes a refined identity of a PV's disk.
func (p *publisher) recordDisk(ctx context.Context, pv *v1.PersistentVolume, id identity.ID) error {
	if _, _, err := p.Marks.Apply(ctx, pv, pvstate.RefineDisk(id)); err != nil {
		return err
	}
	klog.FromContext(ctx).V(2).Info("Recorded a newer form of a PV's disk identity", "pv", pv.Name, "disk", id)
	return nil
}

// refinable reports whether a PV's recorded identity may be replaced by a
// newer form of it: not while it is deleted, released or failed.
func refinable(pv *v1.PersistentVolume) bool {
	if _, missing := pv.Annotations[jobs.AnnVolumeMissing]; missing {
		return false // its path had a gap: what is there now may be another disk
	}
	return pv.DeletionTimestamp == nil && (pvops.Unclaimed(pv) || pv.Status.Phase == v1.VolumeBound)
}
