package controller

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/nodeplug/localpv-api/localpv/v1alpha1"

	"github.com/nodeplug/nodeplug/pkg/localpv/config"

	"github.com/nodeplug/nodeplug/pkg/localpv/metrics"
	"github.com/nodeplug/nodeplug/pkg/localpv/report"
	"github.com/nodeplug/nodeplug/pkg/localpv/validation"
)

// Labels a PV of a disk chosen by a disk selector carries, so that a claim
// can select disks by their properties.
const (
	LabelDiskRotational = "disk.localpv.nodeplug.io/rotational"
	LabelDiskModel      = "disk.localpv.nodeplug.io/model"
	LabelDiskVendor     = "disk.localpv.nodeplug.io/vendor"
	LabelDiskSerial     = "disk.localpv.nodeplug.io/serial"
	LabelDiskWWN        = "disk.localpv.nodeplug.io/wwn"
)

// notLabelChar matches what a label value may not hold.
var notLabelChar = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// diskLabels returns the property labels of a selected disk's PV. Values
// are made valid label values: runs of other characters become "_", the
// value is cut to 63 characters and trimmed to start and end with an
// alphanumeric; a value left empty is omitted.
func diskLabels(d *report.Disk) map[string]string {
	if d == nil {
		return nil
	}
	out := map[string]string{LabelDiskRotational: strconv.FormatBool(d.Rotational)}
	for k, v := range map[string]string{LabelDiskModel: d.Model, LabelDiskVendor: d.Vendor,
		LabelDiskSerial: d.Serial, LabelDiskWWN: d.WWN} {
		if v = labelValue(v); v != "" {
			out[k] = v
		}
	}
	return out
}

func labelValue(s string) string {
	s = notLabelChar.ReplaceAllString(s, "_")
	if len(s) > 63 {
		s = s[:63]
	}
	return strings.TrimFunc(s, func(r rune) bool {
		return !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9')
	})
}

// diskUnusable tells the admin why a disk that matches its class gets no PV
// and returns true. A disk that already has its PV is never checked here:
// its user may have written a file system on it.
func (c *controller) diskUnusable(node *v1.Node, v validation.Volume) bool {
	if v.Volume.Disk == nil || v.Config.DiskSelector == nil {
		return false
	}
	reason := v.Config.DiskSelector.Skip(v.Volume.Disk)
	if reason == "" {
		return false
	}
	metrics.SkippedDisks.WithLabelValues(v.Class, reason).Inc()
	d := v.Volume.Disk
	c.event(node, v1.EventTypeWarning, "DiskSkipped",
		"Disk %s (%s) matches class %s but is not published: %s (signature %s, %d partitions, %d holders, busy %t); %s",
		d.Name, v.HostPath, v.Class, reason, d.Signature, d.Partitions, d.Holders, d.Busy, skipFix(reason, v.HostPath))
	return true
}

// skipFix says what an admin does about a skipped disk.
func skipFix(reason, path string) string {
	switch reason {
	case config.SkipInUse:
		return "something holds it (a mount, md, device-mapper or another exclusive opener): release it if it is free to use"
	case config.SkipSignatureUnknown:
		return "its content could not be read in time; check the device (dmesg) and run discovery again"
	case config.SkipReadOnly:
		return "make it writable"
	}
	return "if its data may go, wipe it (wipefs -a " + path + ") to publish it, or set diskSelector.acceptSignatures for a disk whose only fault is its signature"
}

// recordInventory writes a node's disk inventory into the status of its
// NodeDiskState when it differs from the last one written. A node without
// a NodeDiskState (no watcher yet) gets none. Errors are logged: the
// inventory is informational.
func (c *controller) recordInventory(ctx context.Context, node string, r *report.Report) {
	logger := klog.FromContext(ctx)
	metrics.InventoryDisks.WithLabelValues(node).Set(float64(r.DisksTotal))
	if c.opts.Notifications == nil {
		return
	}
	status := v1alpha1.NodeDiskStateStatus{DisksTotal: int32(min(r.DisksTotal, 1<<30))}
	for _, d := range r.Disks {
		status.Disks = append(status.Disks, apiDisk(d))
	}
	doc, err := json.Marshal(status)
	if err != nil {
		logger.Error(err, "Failed to encode the disk inventory", "node", node)
		return
	}
	sum := sha256.Sum256(doc)
	digest := hex.EncodeToString(sum[:])
	same := false
	c.withNode(node, func(st *nodeState) { same = st.inventory == digest })
	if same {
		return
	}
	patch, err := inventoryPatch(status, c.clock.Now())
	if err == nil {
		_, err = c.opts.Notifications.Patch(ctx, node, types.MergePatchType, patch, metav1.PatchOptions{}, "status")
	}
	switch {
	case apierrors.IsNotFound(err):
		logger.V(2).Info("Node has no NodeDiskState, its disk inventory is not recorded", "node", node)
	case err != nil:
		logger.Error(fmt.Errorf("failed to record the disk inventory of node %s: %w", node, err), "Disk inventory not recorded")
	default:
		c.withNode(node, func(st *nodeState) { st.inventory = digest })
		logger.V(2).Info("Recorded the disk inventory", "node", node, "disks", r.DisksTotal)
	}
}

// inventoryPatch is the merge patch that sets the inventory. Every field is
// written, an empty list as null and no disks as 0, so that a list the
// report no longer carries (no disks left, or dropped for size) is cleared
// rather than kept beside a fresh inventoryTime.
func inventoryPatch(status v1alpha1.NodeDiskStateStatus, now time.Time) ([]byte, error) {
	var disks any
	if len(status.Disks) > 0 {
		disks = status.Disks
	}
	return json.Marshal(map[string]any{"status": map[string]any{
		"disks":         disks,
		"disksTotal":    status.DisksTotal,
		"inventoryTime": metav1.NewTime(now),
	}})
}

func apiDisk(d report.Disk) v1alpha1.Disk {
	return v1alpha1.Disk{Name: d.Name, SizeBytes: d.Size, Rotational: d.Rotational, Removable: d.Removable,
		ReadOnly: d.ReadOnly, Model: d.Model, Vendor: d.Vendor, Serial: d.Serial, WWN: d.WWN, IDs: d.IDs,
		Partitions: int32(min(d.Partitions, 1<<20)), Holders: int32(min(d.Holders, 1<<20)), Stacked: d.Stacked,
		Signature: d.Signature}
}
