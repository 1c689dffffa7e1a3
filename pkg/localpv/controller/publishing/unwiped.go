package publishing

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/nodeplug/nodeplug/pkg/localpv/controller/machine"
	"github.com/nodeplug/nodeplug/pkg/localpv/jobs"
	"github.com/nodeplug/nodeplug/pkg/localpv/metrics"
	"github.com/nodeplug/nodeplug/pkg/localpv/naming"
	"github.com/nodeplug/nodeplug/pkg/localpv/unwiped"
	"github.com/nodeplug/nodeplug/pkg/localpv/validation"
)

// wipeReturnedDisk handles a reported volume whose disk is remembered as
// unwiped: it is not published; a cleanup Job, checked against the disk's
// identity like any other, wipes it first, and the next report publishes it.
func (p *publisher) wipeReturnedDisk(ctx context.Context, node *v1.Node, v validation.Volume, key string, d unwiped.Disk) error {
	cur := machine.Of(node)
	volID := naming.MachineVolumeID(node.Name, v.HostPath, cur.ID, cur.UUID)
	if locked, err := p.State.PathLocked(node.Name, v.HostPath); err != nil || locked {
		return err // its wipe runs, or failed and is retried
	}
	js, err := p.State.CleanupJobs(volID)
	if err != nil {
		return err
	}
	t := jobs.CleanupTarget{PVName: d.PV, NodeName: node.Name, Class: v.Class, Kind: v.Volume.Kind, HostPath: v.HostPath,
		Mount: v.Config, VolumeID: volID, MachineID: cur.ID, SystemUUID: cur.UUID, DiskID: v.Volume.ID}
	job := jobs.CleanupJob(p.Params, p.Provisioner, t, jobs.NextAttempt(js))
	job.Annotations[jobs.AnnUnwipedDisk] = key
	if _, err := p.Kube.BatchV1().Jobs(job.Namespace).Create(ctx, job, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("failed to create the cleanup Job of returned disk %s: %w", v.HostPath, err)
	}
	metrics.JobsCreated.WithLabelValues(metrics.KindCleanup).Inc()
	p.Recorder.Eventf(node, v1.EventTypeWarning, "UnwipedDiskReturned",
		"Disk %s at %s held the data of PV %s, which was dropped without a wipe (%s, %s at %s); cleanup Job %s wipes it before it is published",
		v.Volume.ID, v.HostPath, d.PV, d.Reason, d.Node, d.Path, job.Name)
	klog.FromContext(ctx).V(2).Info("Wiping a returned unwiped disk", "path", v.HostPath, "pv", d.PV, "job", klog.KObj(job))
	return nil
}
