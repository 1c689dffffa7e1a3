package publishing

import (
	"regexp"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"

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
//
// A block entry of a class without a selector (a link an admin made) is
// checked the same way, by how discovery found its device in use
// (report.Volume.Use): partitions, holders, busy, a signature; a device
// linked by hand is no more free to wipe than one a selector chose.
func (p *publisher) diskUnusable(node *v1.Node, v validation.Volume) bool {
	var reason string
	d := v.Volume.Disk
	switch {
	case d != nil && v.Config.DiskSelector != nil:
		reason = v.Config.DiskSelector.Skip(d)
	case v.Volume.Kind == report.KindBlock && v.Volume.Use != nil && v.Config.DiskSelector == nil:
		d = v.Volume.Use
		reason = (&config.DiskSelector{}).Skip(d)
	}
	if reason == "" {
		return false
	}
	metrics.SkippedDisks.WithLabelValues(v.Class, reason).Inc()
	p.Recorder.Eventf(node, v1.EventTypeWarning, "DiskSkipped",
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
