package config

import (
	"fmt"
	"path/filepath"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/nodeplug/nodeplug/pkg/localpv/report"
)

// DefaultLinkDir is the hostDir of a class with a disk selector when none is
// given: udev's directory of stable disk links.
const DefaultLinkDir = "/dev/disk/by-id"

// linkDirRoot is the part of /dev a class's hostDir may lie in.
const linkDirRoot = "/dev/disk"

// maxSelectorGlobs bounds the models and vendors of a selector.
const maxSelectorGlobs = 32

// DiskSelector chooses whole disks by their properties. Every field that is
// set must match; an empty selector matches every selectable disk
// (Selectable). A disk qualifies only when it is also unused (Skip): no
// partition, no stacked device (device-mapper, md), not in use (an O_EXCL
// open succeeds) and, unless AcceptSignatures is set, no known signature.
type DiskSelector struct {
	// Rotational, when set, matches the kernel's queue/rotational flag.
	Rotational *bool `json:"rotational,omitempty"`
	// MinSize and MaxSize bound the disk's size, inclusive.
	MinSize *resource.Quantity `json:"minSize,omitempty"`
	MaxSize *resource.Quantity `json:"maxSize,omitempty"`
	// Models and Vendors are globs (path.Match syntax, case-sensitive)
	// matched against the model and vendor strings that sysfs reports.
	Models  []string `json:"models,omitempty"`
	Vendors []string `json:"vendors,omitempty"`
	// AcceptSignatures lets disks holding a partition table or file system
	// signature qualify; their content is handed over as it is.
	AcceptSignatures bool `json:"acceptSignatures,omitempty"`
	// LoopDevices lets loop devices be considered. A loop device is a file
	// on another disk: this is for test clusters.
	LoopDevices bool `json:"loopDevices,omitempty"`
}

// notDisks are the kernel name prefixes of block devices that are never a
// local disk of their own: device-mapper and md devices (built on other
// disks), optical drives, RAM-backed devices, floppies, network and
// replicated devices (nbd, rbd, drbd) and ZFS volumes.
var notDisks = []string{"dm-", "md", "sr", "zram", "ram", "fd", "nbd", "rbd", "drbd", "zd"}

// Selectable reports whether a selector could choose the block device with
// kernel name name: not one of notDisks, and a loop device only when loop
// is set. Discovery probes only the disks some selector could choose.
func Selectable(name string, loop bool) bool {
	if strings.HasPrefix(name, "loop") {
		return loop
	}
	for _, p := range notDisks {
		if strings.HasPrefix(name, p) {
			return false
		}
	}
	return true
}

// Matches reports whether the disk's properties match the selector: a
// selectable disk (Selectable, not stacked on other devices) whose every
// set property matches. It does not look at whether the disk is in use;
// see Skip.
func (s *DiskSelector) Matches(d *report.Disk) bool {
	switch {
	case d.Stacked || !Selectable(d.Name, s.LoopDevices):
		return false
	case s.Rotational != nil && *s.Rotational != d.Rotational:
		return false
	case s.MinSize != nil && d.Size < s.MinSize.Value():
		return false
	case s.MaxSize != nil && d.Size > s.MaxSize.Value():
		return false
	case len(s.Models) > 0 && !matchAny(s.Models, d.Model):
		return false
	case len(s.Vendors) > 0 && !matchAny(s.Vendors, d.Vendor):
		return false
	}
	return true
}

// Reasons a disk that matches a selector is not published.
const (
	SkipPartitioned      = "HasPartitions"
	SkipHeld             = "HeldByDevice"
	SkipSignature        = "HasSignature"
	SkipSignatureUnknown = "SignatureUnreadable"
	SkipReadOnly         = "ReadOnly"
	// SkipInUse is a disk that could not be opened exclusively: mounted,
	// held, or opened exclusively by another program.
	SkipInUse = "InUse"
)

// Skip returns why a matching disk cannot be published, or "". A disk in
// use, or whose probe did not finish, is never published, not even with
// AcceptSignatures: a mounted whole-disk file system is someone's.
func (s *DiskSelector) Skip(d *report.Disk) string {
	switch {
	case d.Partitions > 0:
		return SkipPartitioned
	case d.Holders > 0:
		return SkipHeld
	case d.ReadOnly:
		return SkipReadOnly
	case d.Busy:
		return SkipInUse
	case d.Signature == report.SignatureUnknown || d.Signature == "":
		return SkipSignatureUnknown
	case s.AcceptSignatures:
		return ""
	case d.Signature != report.SignatureNone:
		return SkipSignature
	}
	return ""
}

func matchAny(globs []string, s string) bool {
	for _, g := range globs {
		if ok, _ := filepath.Match(g, s); ok {
			return true
		}
	}
	return false
}

func validateDiskSelector(m MountConfig, p *field.Path) field.ErrorList {
	s := m.DiskSelector
	var errs field.ErrorList
	if !m.AcceptsDevices() {
		errs = append(errs, field.Invalid(p.Child("volumeMode"), m.VolumeMode,
			"a class with a diskSelector publishes whole disks: use volumeMode Block, or set fsType"))
	}
	for _, q := range []struct {
		name string
		v    *resource.Quantity
	}{{"minSize", s.MinSize}, {"maxSize", s.MaxSize}} {
		if q.v != nil && q.v.Sign() <= 0 {
			errs = append(errs, field.Invalid(p.Child("diskSelector", q.name), q.v.String(), "must be positive, for example 100Gi"))
		}
	}
	if s.MinSize != nil && s.MaxSize != nil && s.MinSize.Cmp(*s.MaxSize) > 0 {
		errs = append(errs, field.Invalid(p.Child("diskSelector", "maxSize"), s.MaxSize.String(),
			"must not be smaller than minSize "+s.MinSize.String()))
	}
	errs = append(errs, validateGlobs(s.Models, p.Child("diskSelector", "models"))...)
	errs = append(errs, validateGlobs(s.Vendors, p.Child("diskSelector", "vendors"))...)
	return errs
}

func validateGlobs(globs []string, p *field.Path) field.ErrorList {
	if len(globs) > maxSelectorGlobs {
		return field.ErrorList{field.TooMany(p, len(globs), maxSelectorGlobs)}
	}
	var errs field.ErrorList
	for i, g := range globs {
		if strings.TrimSpace(g) == "" {
			errs = append(errs, field.Invalid(p.Index(i), g, "must not be empty"))
		} else if _, err := filepath.Match(g, ""); err != nil {
			errs = append(errs, field.Invalid(p.Index(i), g, fmt.Sprintf("bad glob: %v", err)))
		}
	}
	return errs
}

// validateLinkDirs checks the directories of a class with a disk selector.
// They may lie in /dev/disk (udev's link directories), which every
// discovery and cleanup Job of such a class sees through its /dev mount: the
// mountDir must then be the hostDir.
func validateLinkDirs(m MountConfig, p *field.Path) field.ErrorList {
	if !within(m.HostDir, linkDirRoot) {
		return append(validateDir(m.HostDir, p.Child("hostDir")), validateDir(m.MountDir, p.Child("mountDir"))...)
	}
	switch {
	case m.HostDir == linkDirRoot || filepath.Clean(m.HostDir) != m.HostDir:
		return field.ErrorList{field.Invalid(p.Child("hostDir"), m.HostDir, "must be a clean directory below "+linkDirRoot+", such as "+DefaultLinkDir)}
	case m.MountDir != m.HostDir:
		return field.ErrorList{field.Invalid(p.Child("mountDir"), m.MountDir, "must equal hostDir "+m.HostDir+", which Jobs see through their /dev mount")}
	}
	return nil
}

// InDev reports whether the class's hostDir lies in /dev/disk, so that Jobs
// see it through their /dev mount and need no mount of their own for it.
func (m MountConfig) InDev() bool { return within(m.HostDir, linkDirRoot) }
