package discovery

import (
	"regexp"
	"slices"
	"strings"

	"github.com/nodeplug/nodeplug/pkg/localpv/report"
)

// identityLinkPrefixes rank the links udev names after a disk's own
// identity: its world wide name; an NVMe namespace's EUI-64, NGUID, UUID or
// the kernel's nvme.<vid>-<serial>-<model>-<nsid> wwid; an NVMe namespace by
// its controller's model, serial and number (nvme-<model>_<serial>_<nsid>,
// see nvmeNamespaceRank); the controller's model and serial alone
// (nvme-<model>_<serial>, which udev points at one namespace or another of
// the controller); then the bus and serial number. Links named after
// content (lvm-pv-uuid-, md-uuid-, md-name-, dm-name-, dm-uuid-, lvm-,
// bcache-) change when a tenant writes the disk, and names an operator
// chose (google-, ...) can move to another disk: neither is an identity
// link.
var identityLinkPrefixes = []string{"wwn-", "nvme-eui.", "nvme-nguid.", "nvme-uuid.", "nvme-nvme.", nvmeNamespaceLink, "nvme-",
	"ata-", "scsi-", "virtio-", "usb-", "mmc-"}

// nvmeNamespaceLink stands in identityLinkPrefixes for the links
// nvme-<model>_<serial>_<nsid>, which name one namespace.
const nvmeNamespaceLink = "nvme-*_<nsid>"

// nvmeNamespaceSuffix matches the namespace number udev appends to an NVMe
// controller's model and serial.
var nvmeNamespaceSuffix = regexp.MustCompile(`^nvme-.+_[0-9]+$`)

// partitionLink matches udev's links to a partition of a disk.
var partitionLink = regexp.MustCompile(`-part[0-9]+$`)

// linkRank returns the rank of an identity link (0 is best), or -1 for a
// link that names a disk by something else, or a partition.
func linkRank(name string) int {
	if partitionLink.MatchString(name) {
		return -1
	}
	for i, p := range identityLinkPrefixes {
		if p == nvmeNamespaceLink && nvmeNamespaceSuffix.MatchString(name) || strings.HasPrefix(name, p) {
			return i
		}
	}
	return -1
}

// betterLink reports whether link a (of rank r) is preferred to b of the
// same rank: the first in name order, except that of two NVMe links by
// model and serial the longer wins, so that nvme-<model>_<serial>_<nsid>
// beats nvme-<model>_<serial> when the serial ends in digits.
func betterLink(a, b string, r int) bool {
	if identityLinkPrefixes[r] == nvmeNamespaceLink && len(a) != len(b) {
		return len(a) > len(b)
	}
	return a < b
}

// preferredLink returns the link a disk is published under: of its
// identity links, the one of the best rank, the first in name order within
// a rank. It depends only on the set of identity links, which udev derives
// from the disk itself, so it stays the same after a reboot renames
// /dev/sdX and after a tenant writes the disk. ok is false when the disk
// has no identity link.
func preferredLink(names []string) (string, bool) {
	best, bestRank := "", len(identityLinkPrefixes)
	for _, n := range names {
		if r := linkRank(n); r >= 0 && (r < bestRank || r == bestRank && betterLink(n, best, r)) {
			best, bestRank = n, r
		}
	}
	return best, best != ""
}

// capLinks returns at most report.MaxDiskIDs of a disk's link names,
// sorted: its identity links by rank first, then the others in name order.
func capLinks(names []string) []string {
	if len(names) <= report.MaxDiskIDs {
		return names
	}
	ranked := slices.Clone(names)
	slices.SortStableFunc(ranked, func(a, b string) int {
		ra, rb := linkRank(a), linkRank(b)
		switch {
		case ra == rb:
			return strings.Compare(a, b)
		case ra < 0:
			return 1
		case rb < 0:
			return -1
		}
		return ra - rb
	})
	out := ranked[:report.MaxDiskIDs]
	slices.Sort(out)
	return out
}
