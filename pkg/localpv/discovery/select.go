package discovery

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"k8s.io/klog/v2"

	"github.com/nodeplug/nodeplug/pkg/localpv/config"
	"github.com/nodeplug/nodeplug/pkg/localpv/identity"
	"github.com/nodeplug/nodeplug/pkg/localpv/report"
)

// Skip reasons of disks chosen by a selector, besides config.Skip*.
const (
	// SkipSelectedByOtherClass is a disk that an earlier class (in name
	// order) sharing the link directory selected too.
	SkipSelectedByOtherClass = "SelectedByOtherClass"
	// SkipNoIdentityLink is a disk whose matching links are all named after
	// its content, or chosen by an operator, none after its identity (see
	// identityLinkPrefixes): its path could change under its PV.
	SkipNoIdentityLink = "NoIdentityLink"
)

// SelectDisks returns the class's volumes chosen by its disk selector: for
// every whole disk of the inventory that has a link in the class directory
// matching namePattern and whose properties match, one volume named after
// its preferred identity link, with the disk's properties, identity and
// kernel name. Whether the disk is unused is the master's decision
// (config.DiskSelector.Skip): a disk that its own PV's user formatted is
// still that PV's volume. claimed maps disks chosen by an earlier class to
// that class, and is updated. Only an unreadable class directory fails.
func (s *Scanner) SelectDisks(ctx context.Context, spec ClassSpec, disks []report.Disk, claimed map[string]string) ([]Entry, error) {
	logger := klog.FromContext(ctx)
	links, err := LinksByDevice(spec.MountDir)
	if err != nil {
		return nil, err
	}
	var out []Entry
	for i := range disks {
		d := &disks[i]
		names := matchingLinks(spec.NamePattern, links[d.Name])
		if len(names) == 0 || !spec.DiskSelector.Matches(d) {
			continue
		}
		e := s.selectDisk(spec, d, names, claimed)
		if e.Skip != "" {
			logger.V(2).Info("Disk matches the class but is skipped", "class", spec.Name, "disk", d.Name, "link", e.Name, "reason", e.Skip)
		}
		out = append(out, e)
	}
	slices.SortFunc(out, func(a, b Entry) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

func (s *Scanner) selectDisk(spec ClassSpec, d *report.Disk, names []string, claimed map[string]string) Entry {
	link, ok := preferredLink(names)
	if !ok {
		return Entry{Name: names[0], Skip: SkipNoIdentityLink}
	}
	e := Entry{Name: link}
	if _, err := s.resolveDevice(filepath.Join(spec.MountDir, link)); err != nil {
		e.Skip = SkipNotBlockDevice
	} else if owner, ok := claimed[d.Name]; ok && owner != spec.Name {
		e.Skip = SkipSelectedByOtherClass
	}
	if e.Skip != "" {
		return e
	}
	claimed[d.Name] = spec.Name
	props := *d
	props.IDs = nil
	e.Kind, e.Capacity, e.Disk = report.KindBlock, d.Size, &props
	e.ID, e.Dev = s.diskIdentity(d), d.Name
	if e.ID == "" {
		e.IDErr = fmt.Errorf("disk %s reports no identity (no WWN, serial or backing file)", d.Name)
	}
	return e
}

// diskIdentity is the identity of a whole disk of the inventory, as
// identity.Device reads it: a loop device by its backing file, an NVMe
// namespace by its namespace, another disk by its WWN or serial.
func (s *Scanner) diskIdentity(d *report.Disk) identity.ID {
	id, err := identity.WholeDisk(s.sysDir(), d.Name)
	if err != nil {
		return ""
	}
	return id
}

func matchingLinks(pattern string, names []string) []string {
	var out []string
	for _, n := range names {
		if config.MatchName(pattern, n) {
			out = append(out, n)
		}
	}
	return out
}
