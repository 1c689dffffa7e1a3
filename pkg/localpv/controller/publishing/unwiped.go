package publishing

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/nodeplug/nodeplug/pkg/localpv/controller/machine"
	"github.com/nodeplug/nodeplug/pkg/localpv/controller/pvstate"
	"github.com/nodeplug/nodeplug/pkg/localpv/jobs"
	"github.com/nodeplug/nodeplug/pkg/localpv/metrics"
	"github.com/nodeplug/nodeplug/pkg/localpv/naming"
	"github.com/nodeplug/nodeplug/pkg/localpv/unwiped"
	"github.com/nodeplug/nodeplug/pkg/localpv/validation"
)

// holdReturnedDisk handles a reported volume whose disk is remembered as
// unwiped: a tenant's data is still on it, and whether that data is to be
// wiped or kept (a node rebuilt with its disks) is an admin's decision. Its
// PV is created held (package pvstate): Released to a claim that never
// exists, so no claim binds it and no cleanup wipes it until an admin sets
// the admin-action annotation on it.
func (p *publisher) holdReturnedDisk(ctx context.Context, node *v1.Node, hostname string, v validation.Volume, key string,
	d unwiped.Disk, taken *takenDisks) error {
	if locked, err := p.State.PathLocked(node.Name, v.HostPath); err != nil || locked {
		return err // a wipe of the path runs, or failed and is retried
	}
	sc, err := p.ownClass(ctx, node, v)
	if err != nil || sc == nil {
		return err
	}
	cur := machine.Of(node)
	id := naming.MachineVolumeID(node.Name, v.HostPath, cur.ID, cur.UUID)
	pv, _ := pvstate.Hold(key).Preview(p.buildPV(node, hostname, id, v, nil, sc.MountOptions), p.Clock.Now())
	if _, err := p.Kube.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{}); err != nil {
		if apierrors.IsAlreadyExists(err) {
			return nil
		}
		return fmt.Errorf("failed to create the held PV of returned disk %s: %w", v.HostPath, err)
	}
	taken.add(v, "PV "+pv.Name)
	metrics.HeldDisks.Inc()
	msg := fmt.Sprintf("Disk %s at %s held the data of PV %s, which was dropped without a wipe (%s, node %s, path %s, "+
		"remembered by the installation in namespace %s as UnwipedDisk %s); it is held: not published for claims and not "+
		"wiped. Set the annotation %s=%s on PV %s to wipe it, or %s=%s to publish it again with its data", v.Volume.ID,
		v.HostPath, d.PV, d.Reason, d.Node, d.Path, d.Installation, key,
		jobs.AnnAdminAction, jobs.AdminActionWipe, pv.Name, jobs.AnnAdminAction, jobs.AdminActionKeep)
	p.Recorder.Eventf(node, v1.EventTypeWarning, "DiskHeld", "%s", msg)
	p.Recorder.Eventf(pv, v1.EventTypeWarning, "DiskHeld", "%s", msg)
	klog.FromContext(ctx).Info("Holding a returned unwiped disk for an admin", "path", v.HostPath, "pv", pv.Name, "droppedPV", d.PV)
	return nil
}
