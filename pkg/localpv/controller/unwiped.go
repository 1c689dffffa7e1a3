package controller

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	batchv1 "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/klog/v2"

	"github.com/nodeplug/nodeplug/pkg/localpv/identity"
	"github.com/nodeplug/nodeplug/pkg/localpv/jobs"
	"github.com/nodeplug/nodeplug/pkg/localpv/metrics"
	"github.com/nodeplug/nodeplug/pkg/localpv/naming"
	"github.com/nodeplug/nodeplug/pkg/localpv/validation"
)

// UnwipedDisksConfigMap is the ConfigMap, in the master's namespace, that
// remembers the disks of PVs dropped without a wipe: a released tenant's
// data is still on them. Such a disk is wiped before it is published again,
// wherever it comes back.
const UnwipedDisksConfigMap = "local-volume-provisioner-unwiped-disks"

// unwipedDisk is one entry of that ConfigMap.
type unwipedDisk struct {
	ID     identity.ID `json:"id"`
	PV     string      `json:"pv"`
	Node   string      `json:"node"`
	Path   string      `json:"path"`
	Since  string      `json:"since"`
	Reason string      `json:"reason"`
}

// unwipedKey is an entry's key: a strong identity is the same disk on any
// node, a weak one only on its node.
func unwipedKey(node string, id identity.ID) string {
	in := string(id)
	if !id.Strong() {
		in = node + "\x00" + in
	}
	sum := sha256.Sum256([]byte(in))
	return "disk-" + hex.EncodeToString(sum[:10])
}

// unwipedDisks reads the remembered disks.
func (c *controller) unwipedDisks(ctx context.Context) (map[string]unwipedDisk, error) {
	cm, err := c.kube.CoreV1().ConfigMaps(c.opts.Jobs.Namespace).Get(ctx, UnwipedDisksConfigMap, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return map[string]unwipedDisk{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("failed to read ConfigMap %s: %w", UnwipedDisksConfigMap, err)
	}
	out := make(map[string]unwipedDisk, len(cm.Data))
	for k, raw := range cm.Data {
		var d unwipedDisk
		if json.Unmarshal([]byte(raw), &d) == nil && d.ID.Valid() == nil && d.ID != "" {
			out[k] = d
		}
	}
	return out, nil
}

// rememberUnwiped records the disk of a released PV that is dropped without
// a wipe. A PV without a recorded disk cannot be recognised again and is
// not recorded.
func (c *controller) rememberUnwiped(ctx context.Context, pv *v1.PersistentVolume, reason string) error {
	id := diskOf(pv)
	if id == "" || pv.Spec.ClaimRef == nil {
		return nil
	}
	node := pv.Annotations[jobs.AnnNode]
	d := unwipedDisk{ID: id, PV: pv.Name, Node: node, Path: pv.Annotations[jobs.AnnHostPath],
		Since: c.clock.Now().UTC().Format("2006-01-02T15:04:05Z"), Reason: reason}
	raw, err := json.Marshal(d)
	if err != nil {
		return err
	}
	key := unwipedKey(node, id)
	err = c.updateUnwiped(ctx, func(data map[string]string) { data[key] = string(raw) })
	if err != nil {
		return fmt.Errorf("failed to remember the unwiped disk of PV %s: %w", pv.Name, err)
	}
	metrics.UnwipedDisks.Inc()
	return nil
}

// forgetUnwiped removes an entry once its disk was wiped.
func (c *controller) forgetUnwiped(ctx context.Context, key string) error {
	return c.updateUnwiped(ctx, func(data map[string]string) { delete(data, key) })
}

func (c *controller) updateUnwiped(ctx context.Context, change func(map[string]string)) error {
	cms := c.kube.CoreV1().ConfigMaps(c.opts.Jobs.Namespace)
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cm, err := cms.Get(ctx, UnwipedDisksConfigMap, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			cm = &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: UnwipedDisksConfigMap, Namespace: c.opts.Jobs.Namespace,
				Labels: map[string]string{jobs.LabelManagedBy: jobs.ManagedByValue}}, Data: map[string]string{}}
			change(cm.Data)
			if len(cm.Data) == 0 {
				return nil
			}
			_, err = cms.Create(ctx, cm, metav1.CreateOptions{})
			return err
		}
		if err != nil {
			return err
		}
		cm = cm.DeepCopy()
		if cm.Data == nil {
			cm.Data = map[string]string{}
		}
		change(cm.Data)
		_, err = cms.Update(ctx, cm, metav1.UpdateOptions{})
		return err
	})
}

// wipeReturnedDisk handles a reported volume whose disk is remembered as
// unwiped: it is not published; a cleanup Job, checked against the disk's
// identity like any other, wipes it first, and the next report publishes it.
func (c *controller) wipeReturnedDisk(ctx context.Context, node *v1.Node, v validation.Volume, key string, d unwipedDisk) error {
	cur := machineOf(node)
	volID := naming.MachineVolumeID(node.Name, v.HostPath, cur.id, cur.uuid)
	if locked, err := c.pathLocked(node.Name, v.HostPath); err != nil || locked {
		return err // its wipe runs, or failed and is retried
	}
	js, err := c.cleanupJobs(volID)
	if err != nil {
		return err
	}
	t := jobs.CleanupTarget{PVName: d.PV, NodeName: node.Name, Class: v.Class, Kind: v.Volume.Kind, HostPath: v.HostPath,
		Mount: v.Config, VolumeID: volID, MachineID: cur.id, SystemUUID: cur.uuid, DiskID: v.Volume.ID}
	job := jobs.CleanupJob(c.opts.Jobs, c.cfg, t, nextAttempt(js))
	job.Annotations[jobs.AnnUnwipedDisk] = key
	if _, err := c.kube.BatchV1().Jobs(job.Namespace).Create(ctx, job, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("failed to create the cleanup Job of returned disk %s: %w", v.HostPath, err)
	}
	metrics.JobsCreated.WithLabelValues(metrics.KindCleanup).Inc()
	c.event(node, v1.EventTypeWarning, "UnwipedDiskReturned",
		"Disk %s at %s held the data of PV %s, which was dropped without a wipe (%s, %s at %s); cleanup Job %s wipes it before it is published",
		v.Volume.ID, v.HostPath, d.PV, d.Reason, d.Node, d.Path, job.Name)
	klog.FromContext(ctx).V(2).Info("Wiping a returned unwiped disk", "path", v.HostPath, "pv", d.PV, "job", klog.KObj(job))
	return nil
}

// finishReturnedDisk forgets the unwiped disk a succeeded Job wiped.
func (c *controller) finishReturnedDisk(ctx context.Context, job *batchv1.Job) error {
	key := job.Annotations[jobs.AnnUnwipedDisk]
	if key == "" {
		return nil
	}
	return c.forgetUnwiped(ctx, key)
}
