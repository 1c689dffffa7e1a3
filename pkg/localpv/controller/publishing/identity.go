package publishing

import (
	"context"
	"fmt"
	"maps"
	"slices"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/nodeplug/nodeplug/pkg/localpv/controller/machine"
	"github.com/nodeplug/nodeplug/pkg/localpv/controller/pvops"
	"github.com/nodeplug/nodeplug/pkg/localpv/controller/pvstate"
	"github.com/nodeplug/nodeplug/pkg/localpv/identity"
	"github.com/nodeplug/nodeplug/pkg/localpv/jobs"
	"github.com/nodeplug/nodeplug/pkg/localpv/metrics"
	"github.com/nodeplug/nodeplug/pkg/localpv/report"
	"github.com/nodeplug/nodeplug/pkg/localpv/unwiped"
	"github.com/nodeplug/nodeplug/pkg/localpv/validation"
)

// goingUnused reports whether a PV is being deleted and no claim ever used
// it: it holds no data and is gone in a moment, so its disk may be
// published again.
func goingUnused(pv *v1.PersistentVolume) bool {
	return pv.DeletionTimestamp != nil && pv.Spec.ClaimRef == nil
}

// diskOf returns the disk identity a PV records.
func diskOf(pv *v1.PersistentVolume) identity.ID {
	return identity.ID(pv.Annotations[jobs.AnnDiskID])
}

// takenDisks are the disks of a node that already have a PV: by identity
// and by kernel device name, with who holds each (see once.go).
type takenDisks struct {
	ids  map[identity.ID]string
	devs map[string]string
	// partsOf maps the identity of a whole disk to who holds one of its
	// partitions.
	partsOf map[identity.ID]string
	// fsDevs are the devices that held directories' file systems live on;
	// blockWholes and fsWholes the whole disks of held partitions.
	fsDevs, blockWholes, fsWholes map[string]string
	// unresolved are held paths discovery could not resolve: a disk behind
	// one of them cannot be ruled out.
	unresolved []string
	// omitted is set when discovery was not asked to resolve some held
	// paths (more than report.MaxHeld): no volume of any kind can be ruled
	// out from being behind one of them.
	omitted bool
	// unwiped returns the remembered disks of PVs dropped without a wipe
	// that a disk found may be (unwiped.Store.Candidates).
	unwiped func(node, path string, id identity.ID) (map[string]unwiped.Disk, error)
	// at holds the master's PVs at each reported path, looked up once.
	at map[string][]*v1.PersistentVolume
	// shared are the identities that two devices of the node report, with
	// the paths that lead to them: no identity at all.
	shared map[identity.ID][]string
	// elsewhere returns another node that reports an identity too, or "":
	// such an identity names no one disk across nodes.
	elsewhere func(identity.ID) string
}

// unwipedFor returns the remembered unwiped disk a volume's disk is. A
// strong identity is matched on any node and path; a weak one only on its
// node, at its path: two file systems of one node may share it.
func (t *takenDisks) unwipedFor(node, path string, id identity.ID) (string, unwiped.Disk, bool, error) {
	if id == "" {
		return "", unwiped.Disk{}, false, nil
	}
	found, err := t.unwiped(node, path, id)
	if err != nil {
		return "", unwiped.Disk{}, false, err
	}
	unique := t.elsewhere == nil || t.elsewhere(id) == ""
	key := unwiped.Key(node, path, id)
	// Another node's disk only where no other node reports id too.
	if d, ok := found[key]; ok && d.ID == id && (d.Node == node || unique) {
		return key, d, true, nil
	}
	// Remembered under a legacy form of id (on its node and path only
	// unless both are strong): a released PV recorded as a bare file
	// handle, whose cleanup found no proof and dropped it, still holds its
	// tenant's data; a strong fs of a directory baked into a VM image, now
	// read bound to its machine (osfs), is every clone's and names one
	// node's only. In key order, so that every pass picks the same entry
	// when several legacy records agree with id.
	for _, k := range slices.Sorted(maps.Keys(found)) {
		if d := found[k]; identity.Refines(d.ID, id) && (d.ID.Strong() && id.Strong() && unique || d.Node == node && d.Path == path) {
			return k, d, true, nil
		}
	}
	return "", unwiped.Disk{}, false, nil
}

// takenOn collects the disks of a node that have a PV: the identities the
// master's PVs on the node record, the devices behind the reported paths
// that keep their PV, and what the other local PVs' paths lead to.
func (p *publisher) takenOn(ctx context.Context, node *v1.Node, res *validation.Result, held []report.Held) (*takenDisks, error) {
	t := &takenDisks{ids: map[identity.ID]string{}, devs: map[string]string{}, at: map[string][]*v1.PersistentVolume{},
		shared: sharedIdentities(res, held), elsewhere: func(id identity.ID) string { return p.reported.elsewhere(node.Name, id) },
		unwiped: func(node, path string, id identity.ID) (map[string]unwiped.Disk, error) {
			return p.Unwiped.Candidates(ctx, node, path, id)
		}}
	pvs, err := p.State.PVsOnNode(node.Name)
	if err != nil {
		return nil, err
	}
	for _, pv := range pvs {
		if !goingUnused(pv) {
			t.takeID(diskOf(pv), "PV "+pv.Name)
		}
	}
	for _, v := range res.Accepted {
		at, err := p.State.PVsAt(node.Name, v.HostPath)
		if err != nil {
			return nil, err
		}
		t.at[v.HostPath] = at
		for _, pv := range at {
			if identity.Compare(diskOf(pv), v.Volume.ID) != identity.Different {
				t.takeDevice(v.Volume.Kind, v.Volume.Dev, v.Volume.Whole, "PV "+pv.Name)
			}
		}
	}
	for _, h := range held {
		who := "the PV at " + h.Path
		switch {
		case h.Error != "":
			t.unresolved = append(t.unresolved, h.Path+" ("+h.Error+")")
			t.omitted = t.omitted || h.Error == report.ErrHeldOmitted
		default:
			t.takeID(h.ID, who)
			t.takeDevice(h.Kind, h.Dev, h.Whole, who)
		}
	}
	return t, nil
}

// mayPublish checks a volume that has no PV at its path against the disks
// that have one. It returns false, with an Event naming the cause and the
// fix, when the disk is already published or cannot be told apart.
func (p *publisher) mayPublish(node *v1.Node, v validation.Volume, t *takenDisks) bool {
	switch who := t.holder(v); {
	case v.Volume.ID == "":
		p.skipDisk(node, v, "DiskIdentityUnknown", "its disk reports no identity (no WWN or serial, no file system "+
			"UUID or file handle, no loop backing file), so no cleanup could ever check it before a wipe; give the disk a "+
			"serial (virtio: serial=), or use a file system or directory class on it")
		return false
	case who != "":
		p.skipDisk(node, v, "DiskAlreadyPublished", fmt.Sprintf("its disk (%s) is already behind %s; a disk is published once, "+
			"under one path", v.Volume.ID, who))
		return false
	case t.omitted:
		p.skipDisk(node, v, "HeldPathUnresolved", fmt.Sprintf("the node has more local PVs of other provisioners, "+
			"installations or classes than discovery resolves (%d), so the disk may already be behind one of them; nothing new "+
			"is published on the node until some of those PVs are deleted", report.MaxHeld))
		return false
	case v.Volume.Kind == report.KindBlock && len(t.unresolved) > 0:
		p.skipDisk(node, v, "HeldPathUnresolved", fmt.Sprintf("discovery could not resolve the path of another local PV "+
			"on the node (%s), so the disk may already be behind it; put that PV's path in a class directory or under "+
			"/dev, or delete the PV", pvops.Truncate(fmt.Sprint(t.unresolved), 256)))
		return false
	}
	return true
}

func (p *publisher) skipDisk(node *v1.Node, v validation.Volume, reason, why string) {
	metrics.SkippedDisks.WithLabelValues(v.Class, reason).Inc()
	p.Recorder.Eventf(node, v1.EventTypeWarning, reason, "Volume %s of class %s is not published: %s", v.HostPath, v.Class, why)
}

// matchPath decides what a reported volume means for the master's PVs at its
// path. It returns done when the path is settled (a PV is the volume's, or
// the path must stay unpublished); otherwise the volume may get a new PV.
func (p *publisher) matchPath(ctx context.Context, node *v1.Node, v validation.Volume, t *takenDisks) (bool, error) {
	pvs := t.at[v.HostPath]
	cur := machine.Of(node)
	// This machine's PVs (or PVs whose machine is not recorded) first.
	for _, pv := range pvs {
		if machine.Recorded(pv).Differs(cur) {
			continue
		}
		return true, p.matchOwnPath(ctx, pv, v, t)
	}
	for _, pv := range pvs {
		rec := machine.Recorded(pv)
		switch {
		case goingUnused(pv):
		case identity.SameDisk(diskOf(pv), v.Volume.ID) && t.elsewhere(v.Volume.ID) != "":
			p.skipDisk(node, v, "DiskIdentityShared", fmt.Sprintf("PV %s of the machine that ran under this node name before "+
				"(%s) records the disk found at this path (%s), but node %s reports that identity too (a file system cloned into "+
				"several images, disks made from one snapshot), so it proves no disk kept across machines; the PV stays marked and "+
				"nothing is published at the path. Delete the claim and PV %s once its data is given up",
				pv.Name, rec, v.Volume.ID, t.elsewhere(v.Volume.ID), pv.Name))
			return true, nil
		case identity.SameDisk(diskOf(pv), v.Volume.ID):
			return true, p.adoptDisk(ctx, node, pv, rec, cur)
		case identity.DifferentDisk(diskOf(pv), v.Volume.ID):
			if pvops.Cleanable(pv) {
				if err := p.dropReplacedPV(ctx, pv); err != nil {
					return true, err
				}
			}
		case v.Volume.ID.Kind() == identity.KindOSFS:
			p.skipDisk(node, v, "DiskIdentityUnknown", fmt.Sprintf("PV %s of the machine that ran under this node name before "+
				"(%s) is at this path, which is on this machine's OS file system (%q): a machine made from the same image has "+
				"a directory there with the same file system UUID, which is not the PV's data; the PV stays marked and nothing "+
				"is published at the path. Delete the claim and PV %s once its data is given up", pv.Name, rec, v.Volume.ID, pv.Name))
			return true, nil
		default:
			p.skipDisk(node, v, "DiskIdentityUnknown", fmt.Sprintf("PV %s of the machine that ran under this node name before "+
				"(%s) is at this path, and its disk (%q) cannot be proven to be, or not to be, the disk there now (%q); the PV "+
				"stays marked and nothing is published at the path. If the node was re-imaged with its disks kept, restore its "+
				"old machine ID; if the disk there is another one, delete the claim and PV %s",
				pv.Name, rec, diskOf(pv), v.Volume.ID, pv.Name))
			return true, nil
		}
	}
	return false, nil
}

// matchOwnPath handles this machine's PV at a reported path: the same disk
// keeps it; another disk marks it and gets no PV while it exists.
func (p *publisher) matchOwnPath(ctx context.Context, pv *v1.PersistentVolume, v validation.Volume, t *takenDisks) error {
	switch identity.Compare(diskOf(pv), v.Volume.ID) {
	case identity.Same:
		if identity.Refines(diskOf(pv), v.Volume.ID) && refinable(pv) { // a WWN recorded without its serial
			return p.recordDisk(ctx, pv, v.Volume.ID) // the marks next time: one write per PV and pass
		}
		if err := p.unmarkDiskReplaced(ctx, pv); err != nil {
			return err
		}
		return p.clearMissing(ctx, pv)
	case identity.Unknown:
		if diskOf(pv) == "" && v.Volume.ID != "" {
			return p.stampDisk(ctx, pv, v)
		}
		if v.Volume.ID == "" || v.Volume.ID == diskOf(pv) || identity.Refines(v.Volume.ID, diskOf(pv)) {
			// Nothing proves a change (a legacy identity, or the record's
			// older form: a directory on the OS file system read as fs
			// where the machine-id file was not seen); the PV stays as it is.
			return nil
		}
		if identity.Refines(diskOf(pv), v.Volume.ID) {
			if who := t.idHolder(v.Volume.ID); who != "" && who != "PV "+pv.Name {
				break // another PV records the disk found: it is not this PV's
			}
			return p.refineDisk(ctx, pv, v.Volume.ID)
		}
	}
	return p.diskChanged(ctx, pv, v, t)
}

// stampDisk records the disk a PV published before disks were recorded
// leads to, only where it is the PV's own beyond doubt: the PV is never
// claimed or Bound, and its path was reported without a gap (it is not
// marked missing). A Released or missing PV is never stamped with whatever
// is at its path (a disk swapped meanwhile would then be wiped): it waits
// for an admin, with a CleanupRefused Event. An admin's wipe action on a
// Released PV records the disk there now, so that it is wiped.
func (p *publisher) stampDisk(ctx context.Context, pv *v1.PersistentVolume, v validation.Volume) error {
	missing, isMissing := pv.Annotations[jobs.AnnVolumeMissing]
	inUse := !isMissing && (pvops.Unclaimed(pv) || pv.Status.Phase == v1.VolumeBound)
	wipe := pvops.Cleanable(pv) && pvstate.AdminAction(pv) == jobs.AdminActionWipe
	if !inUse && !wipe {
		why := fmt.Sprintf("it is %s", pv.Status.Phase)
		if isMissing {
			why = "its disk was missing since " + missing
		}
		p.Recorder.Eventf(pv, v1.EventTypeWarning, "CleanupRefused", "The PV records no disk identity and %s, so the disk at "+
			"its path %s now (%s) is not taken for its own and is never wiped for it; check what is there: once the PV is "+
			"Released, set the annotation %s=%s on it to wipe that disk, or wipe it yourself and delete the PV",
			why, v.HostPath, v.Volume.ID, jobs.AnnAdminAction, jobs.AdminActionWipe)
		return nil
	}
	if _, _, err := p.Marks.Apply(ctx, pv, pvstate.StampDisk(v.Volume.ID)); err != nil {
		return err
	}
	klog.FromContext(ctx).V(2).Info("Recorded the disk of a PV", "pv", pv.Name, "disk", v.Volume.ID, "adminWipe", wipe)
	if wipe {
		p.VolumeChanged(pv.Labels[jobs.LabelVolumeID])
	}
	return nil
}

// diskChanged handles a path of this machine that leads to another disk
// than its PV's. An unused PV goes (its disk is gone); a released one is
// left to its cleanup Job, whose identity check wipes nothing; a used one is
// kept and marked, and its claim's new pods are refused.
func (p *publisher) diskChanged(ctx context.Context, pv *v1.PersistentVolume, v validation.Volume, t *takenDisks) error {
	path := pv.Annotations[jobs.AnnHostPath]
	switch {
	case pv.DeletionTimestamp != nil, pvops.Cleanable(pv):
		return nil
	case pvops.Unclaimed(pv):
		p.Recorder.Eventf(pv, v1.EventTypeWarning, "DiskReplaced", "The path %s now leads to another disk (%s, the PV's was %s); deleting the unused PV",
			path, v.Volume.ID, diskOf(pv))
		return p.Ops.Delete(ctx, pv, true, "disk_replaced")
	}
	_, wasMarked := pv.Annotations[jobs.AnnDiskReplaced]
	if _, marked, err := p.Marks.Apply(ctx, pv, pvstate.MarkDiskReplaced(v.Volume.ID)); err != nil || !marked {
		return err
	}
	p.MarksChanged()
	if !wasMarked {
		metrics.DiskReplacements.Inc()
	}
	msg := "The PV is kept, nothing is published at its path while it exists, and new pods of its claim are refused: " +
		pvstate.DiskReplacedCause(path, diskOf(pv), v.Volume.ID, t.ids[v.Volume.ID])
	p.Recorder.Eventf(pv, v1.EventTypeWarning, "DiskReplaced", "%s", msg)
	p.Ops.WarnClaim(ctx, pv, "DiskReplaced", msg, v1.VolumeHealthDataLoss)
	return nil
}

// unmarkDiskReplaced clears the mark of a PV whose disk is back at its path.
func (p *publisher) unmarkDiskReplaced(ctx context.Context, pv *v1.PersistentVolume) error {
	if _, ok := pv.Annotations[jobs.AnnDiskReplaced]; !ok {
		return nil
	}
	if _, _, err := p.Marks.Apply(ctx, pv, pvstate.ClearDiskReplaced); err != nil {
		return err
	}
	p.MarksChanged()
	p.Recorder.Eventf(pv, v1.EventTypeNormal, "DiskMatched", "The PV's disk is at %s again; pods may use it", pv.Annotations[jobs.AnnHostPath])
	p.Ops.ClearClaimHealth(ctx, pv)
	return nil
}

// adoptDisk gives the PV of a replaced machine to the current machine when
// its path proves to lead to the same disk: a re-imaged node, a regenerated
// machine ID. No second PV is published for the disk.
func (p *publisher) adoptDisk(ctx context.Context, node *v1.Node, pv *v1.PersistentVolume, rec, cur machine.Identity) error {
	if _, _, err := p.Marks.Apply(ctx, pv, pvstate.AdoptMachine(cur.ID, cur.UUID)); err != nil {
		return err
	}
	p.MarksChanged()
	p.VolumeChanged(pv.Labels[jobs.LabelVolumeID])
	metrics.DisksKeptAcrossMachines.Inc()
	msg := fmt.Sprintf("Node %s runs on another machine (%s, was %s) but the disk at %s is the same disk (%s); the PV stays the disk's",
		node.Name, cur, rec, pv.Annotations[jobs.AnnHostPath], diskOf(pv))
	p.Recorder.Eventf(pv, v1.EventTypeNormal, "MachineChangedDiskKept", "%s", msg)
	p.Recorder.Eventf(node, v1.EventTypeNormal, "MachineChangedDiskKept", "PV %s: %s", pv.Name, msg)
	p.Ops.ClearClaimHealth(ctx, pv)
	return nil
}
