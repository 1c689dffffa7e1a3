package discovery

import (
	"context"
	"path/filepath"
	"slices"
	"strings"

	"k8s.io/klog/v2"

	"github.com/nodeplug/nodeplug/pkg/localpv/config"
	"github.com/nodeplug/nodeplug/pkg/localpv/report"
)

// Skip reasons of disks chosen by a selector, besides config.Skip*.
const (
	// SkipSelectedByOtherClass is a disk that an earlier class (in name
	// order) sharing the link directory selected too.
	SkipSelectedByOtherClass = "SelectedByOtherClass"
)

// preferredLinkPrefixes rank a disk's links: the one named after the WWN
// or EUI comes first, as udev derives it from the device's own identity.
var preferredLinkPrefixes = []string{"wwn-", "nvme-eui.", "nvme-nguid."}

// SelectDisks returns the class's volumes chosen by its disk selector: for
// every whole disk of the inventory, not built on other devices, that has a
// link in the class directory
// matching namePattern and whose properties match, one volume named after
// its preferred link, with the disk's properties. Whether the disk is
// unused is the master's decision (config.DiskSelector.Skip): a disk that
// its own PV's user formatted is still that PV's volume. claimed maps disks
// chosen by an earlier class to that class, and is updated. Only an
// unreadable class directory fails.
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
		if len(names) == 0 || d.Stacked || !spec.DiskSelector.Matches(d) {
			continue
		}
		e := Entry{Name: preferredLink(names)}
		if _, err := s.resolveDevice(filepath.Join(spec.MountDir, e.Name)); err != nil {
			e.Skip = SkipNotBlockDevice
		} else if owner, ok := claimed[d.Name]; ok && owner != spec.Name {
			e.Skip = SkipSelectedByOtherClass
		}
		if e.Skip != "" {
			logger.V(2).Info("Disk matches the class but is skipped", "class", spec.Name, "disk", d.Name, "link", e.Name, "reason", e.Skip)
			out = append(out, e)
			continue
		}
		claimed[d.Name] = spec.Name
		props := *d
		props.IDs = nil
		e.Kind, e.Capacity, e.Disk = report.KindBlock, d.Size, &props
		out = append(out, e)
	}
	slices.SortFunc(out, func(a, b Entry) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
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

// preferredLink picks the link a disk is published under. The choice
// depends only on the set of links, which udev derives from the disk's
// identity, so it is the same after a reboot renames /dev/sdX.
func preferredLink(names []string) string {
	for _, p := range preferredLinkPrefixes {
		for _, n := range names {
			if strings.HasPrefix(n, p) {
				return n
			}
		}
	}
	return names[0]
}
