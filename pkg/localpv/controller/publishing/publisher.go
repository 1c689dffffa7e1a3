package publishing

import (
	"context"
	"errors"
	"fmt"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/nodeplug/nodeplug/pkg/localpv/config"
	"github.com/nodeplug/nodeplug/pkg/localpv/controller/machine"
	"github.com/nodeplug/nodeplug/pkg/localpv/controller/pvops"
	"github.com/nodeplug/nodeplug/pkg/localpv/controller/pvstate"
	"github.com/nodeplug/nodeplug/pkg/localpv/jobs"
	"github.com/nodeplug/nodeplug/pkg/localpv/metrics"
	"github.com/nodeplug/nodeplug/pkg/localpv/naming"
	"github.com/nodeplug/nodeplug/pkg/localpv/report"
	"github.com/nodeplug/nodeplug/pkg/localpv/validation"
)

// Publish publishes the accepted volumes of a report and handles the
// node's PVs whose volumes were not reported. held is what the paths of the
// node's other local PVs lead to.
func (p *publisher) Publish(ctx context.Context, node *v1.Node, res *validation.Result, held []report.Held) error {
	hostname := node.Labels[v1.LabelHostname]
	if hostname == "" {
		p.Recorder.Eventf(node, v1.EventTypeWarning, "MissingHostnameLabel", "Node has no %s label; no PV can be published", v1.LabelHostname)
		return nil
	}
	p.reported.record(node.Name, res)
	taken, err := p.takenOn(ctx, node, res, held)
	if err != nil {
		return err
	}
	present := map[string]bool{}
	var errs []error
	for _, v := range res.Accepted {
		present[v.HostPath] = true
		if err := p.publish(ctx, node, hostname, v, taken); err != nil {
			errs = append(errs, err)
		}
	}
	for _, r := range res.Rejected {
		if mc, ok := p.Provisioner.StorageClassMap[r.Class]; ok {
			present[mc.HostDir+"/"+r.Name] = true // reported, if oddly: not vanished
		}
	}
	if err := p.handleVanished(ctx, node, res, present); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// publish creates the PV of one accepted volume unless its path already has
// the volume's PV, its disk is behind another PV, or its cleanup has not
// succeeded. A disk is matched by what it is (its identity), not by its path.
func (p *publisher) publish(ctx context.Context, node *v1.Node, hostname string, v validation.Volume, taken *takenDisks) error {
	logger := klog.FromContext(ctx)
	if p.sharedIdentity(node, v, taken) {
		return nil
	}
	if done, err := p.matchPath(ctx, node, v, taken); done || err != nil {
		return err
	}
	cur := machine.Of(node)
	id := naming.MachineVolumeID(node.Name, v.HostPath, cur.ID, cur.UUID)
	if pv, err := p.State.ManagedPV(id); err != nil || pv != nil {
		return err
	}
	if taken, err := p.State.PathTaken(node.Name, hostname, v.HostPath); err != nil || taken {
		return err
	}
	key, d, ok, err := taken.unwipedFor(node.Name, v.HostPath, v.Volume.ID)
	if err != nil {
		return err
	}
	if ok {
		if who := taken.holder(v); who != "" {
			// Already held (or published) under another path: one PV per disk.
			p.skipDisk(node, v, "DiskAlreadyPublished", fmt.Sprintf("its disk (%s) is already behind %s; a disk is "+
				"published once, under one path", v.Volume.ID, who))
			return nil
		}
		return p.holdReturnedDisk(ctx, node, hostname, v, key, d, taken)
	}
	if p.diskUnusable(node, v) || !p.mayPublish(node, v, taken) {
		return nil
	}
	if locked, err := p.State.PathLocked(node.Name, v.HostPath); err != nil || locked {
		if locked {
			logger.V(2).Info("Volume has an unfinished cleanup, not publishing it", "path", v.HostPath)
		}
		return err
	}
	sc, err := p.ownClass(ctx, node, v)
	if err != nil || sc == nil {
		return err
	}
	pv := p.buildPV(node, hostname, id, v, sc.ReclaimPolicy, sc.MountOptions)
	if _, err := p.Kube.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{}); err != nil {
		if apierrors.IsAlreadyExists(err) {
			return nil
		}
		return fmt.Errorf("failed to create PV %s: %w", pv.Name, err)
	}
	taken.add(v, "PV "+pv.Name)
	metrics.PVsCreated.WithLabelValues(v.Class).Inc()
	logger.V(2).Info("Created PV", "pv", pv.Name, "path", v.HostPath, "class", v.Class, "disk", v.Volume.ID)
	return nil
}

// ownClass returns the StorageClass of a volume when this master may
// publish into it, or nil (with an Event saying why) when it may not.
func (p *publisher) ownClass(ctx context.Context, node *v1.Node, v validation.Volume) (*storagev1.StorageClass, error) {
	sc, err := p.Classes.Get(v.Class)
	if apierrors.IsNotFound(err) {
		p.Recorder.Eventf(node, v1.EventTypeWarning, "StorageClassNotFound", "StorageClass %s does not exist; volume %s is not published", v.Class, v.HostPath)
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if sc.ReclaimPolicy != nil && *sc.ReclaimPolicy == v1.PersistentVolumeReclaimRecycle {
		p.Recorder.Eventf(node, v1.EventTypeWarning, "UnsupportedReclaimPolicy", "StorageClass %s uses Recycle; use Delete or Retain", v.Class)
		return nil, nil
	}
	if mine, err := p.claimClass(ctx, sc); err != nil || !mine {
		return nil, err
	}
	return sc, nil
}

func (p *publisher) buildPV(node *v1.Node, hostname, id string, v validation.Volume, reclaim *v1.PersistentVolumeReclaimPolicy,
	mountOptions []string) *v1.PersistentVolume {
	policy := v1.PersistentVolumeReclaimDelete
	if reclaim != nil {
		policy = *reclaim
	}
	mode := v1.PersistentVolumeFilesystem
	var fsType *string
	if v.Config.VolumeMode == config.VolumeModeBlock {
		mode = v1.PersistentVolumeBlock
	} else if v.Volume.Kind == report.KindBlock {
		fsType = &v.Config.FsType
	}
	terms := append([]v1.NodeSelectorTerm{{MatchExpressions: []v1.NodeSelectorRequirement{{
		Key: v1.LabelHostname, Operator: v1.NodeSelectorOpIn, Values: []string{hostname}}}}}, v.Config.Selector...)
	lbls := map[string]string{}
	for k, val := range p.Provisioner.LabelsForPV {
		lbls[k] = val
	}
	for _, k := range p.Provisioner.NodeLabelsForPV {
		if val, ok := node.Labels[k]; ok {
			lbls[k] = val
		}
	}
	for k, val := range diskLabels(v.Volume.Disk) {
		lbls[k] = val
	}
	lbls[jobs.LabelManagedBy] = jobs.ManagedByValue
	lbls[jobs.LabelNodeID] = naming.NodeID(node.Name)
	lbls[jobs.LabelVolumeID] = id
	anns := map[string]string{
		jobs.AnnProvisionedBy: p.ProvisionerName, jobs.AnnNode: node.Name,
		jobs.AnnHostPath: v.HostPath, jobs.AnnClass: v.Class, jobs.AnnKind: string(v.Volume.Kind),
		jobs.AnnDiskID: string(v.Volume.ID),
	}
	if m := machine.Of(node); m.ID != "" {
		anns[jobs.AnnMachineID] = m.ID
	}
	if m := machine.Of(node); m.UUID != "" {
		anns[jobs.AnnSystemUUID] = m.UUID
	}
	return &v1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{
			Name:        naming.PVNameForID(id),
			Labels:      lbls,
			Annotations: anns,
			Finalizers:  []string{jobs.FinalizerPVProtection},
		},
		Spec: v1.PersistentVolumeSpec{
			Capacity:                      v1.ResourceList{v1.ResourceStorage: *resource.NewQuantity(RoundCapacity(v.Volume.Capacity), resource.BinarySI)},
			PersistentVolumeSource:        v1.PersistentVolumeSource{Local: &v1.LocalVolumeSource{Path: v.HostPath, FSType: fsType}},
			AccessModes:                   []v1.PersistentVolumeAccessMode{v1.PersistentVolumeAccessMode(v.Config.AccessMode)},
			PersistentVolumeReclaimPolicy: policy,
			StorageClassName:              v.Class,
			MountOptions:                  mountOptions,
			VolumeMode:                    &mode,
			NodeAffinity:                  &v1.VolumeNodeAffinity{Required: &v1.NodeSelector{NodeSelectorTerms: terms}},
		},
	}
}

// RoundCapacity rounds a size down to whole GiB from 10 GiB up, and to whole
// MiB below, so that small size differences between runs do not matter.
func RoundCapacity(b int64) int64 {
	const mi, gi = int64(1) << 20, int64(1) << 30
	if b >= 10*gi {
		return b / gi * gi
	}
	if b >= mi {
		return b / mi * mi
	}
	return b
}

// handleVanished deletes the Available PVs of a node whose volumes the
// report no longer lists, and marks the others. Only classes read without
// error count: an unreadable directory proves nothing.
func (p *publisher) handleVanished(ctx context.Context, node *v1.Node, res *validation.Result, present map[string]bool) error {
	pvs, err := p.State.PVsOnNode(node.Name)
	if err != nil {
		return err
	}
	var errs []error
	for _, pv := range pvs {
		path := pv.Annotations[jobs.AnnHostPath]
		if present[path] || !res.Complete[pv.Annotations[jobs.AnnClass]] || pv.DeletionTimestamp != nil ||
			machine.Recorded(pv).Differs(machine.Of(node)) {
			continue
		}
		if pvops.Unclaimed(pv) {
			p.Recorder.Eventf(pv, v1.EventTypeNormal, "VolumeVanished", "Disk at %s is gone; deleting the unused PV", path)
			if err := p.Ops.Delete(ctx, pv, true, "vanished"); err != nil {
				errs = append(errs, err)
			}
			continue
		}
		if err := p.markMissing(ctx, pv); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// markMissing annotates a used PV whose disk is gone, and warns once.
func (p *publisher) markMissing(ctx context.Context, pv *v1.PersistentVolume) error {
	if _, marked, err := p.Marks.Apply(ctx, pv, pvstate.MarkMissing); err != nil || !marked {
		return err
	}
	msg := fmt.Sprintf("Disk at %s was not found on node %s; the PV is kept because it is %s",
		pv.Annotations[jobs.AnnHostPath], pv.Annotations[jobs.AnnNode], pv.Status.Phase)
	p.Recorder.Eventf(pv, v1.EventTypeWarning, "VolumeMissing", "%s", msg)
	p.Ops.WarnClaim(ctx, pv, "VolumeMissing", msg, v1.VolumeHealthInaccessible)
	return nil
}

// clearMissing removes the missing mark of a PV whose disk is back.
func (p *publisher) clearMissing(ctx context.Context, pv *v1.PersistentVolume) error {
	if _, cleared, err := p.Marks.Apply(ctx, pv, pvstate.ClearMissing); err != nil || !cleared {
		return err
	}
	p.Recorder.Eventf(pv, v1.EventTypeNormal, "VolumeFound", "Disk at %s is back", pv.Annotations[jobs.AnnHostPath])
	p.Ops.ClearClaimHealth(ctx, pv)
	return nil
}
