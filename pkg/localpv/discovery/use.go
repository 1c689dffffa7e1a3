package discovery

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/nodeplug/nodeplug/pkg/localpv/report"
)

// fileSystemDevice returns the kernel name of the block device that the file
// system of the directory p lives on (its st_dev), and the whole disk's
// name when that is a partition; nothing for a file system whose device
// number is no block device's (tmpfs, overlay, btrfs, NFS).
func (s *Scanner) fileSystemDevice(p string) (dev, whole string) {
	var st unix.Stat_t
	if err := unix.Stat(p, &st); err != nil {
		return "", ""
	}
	dir, err := filepath.EvalSymlinks(filepath.Join(s.sysDir(), "dev", "block",
		fmt.Sprintf("%d:%d", unix.Major(st.Dev), unix.Minor(st.Dev))))
	if err != nil {
		return "", ""
	}
	dev = filepath.Base(dir)
	return dev, s.wholeDisk(dev)
}

// wholeDisk returns the kernel name of the whole disk of partition name
// (sdb for sdb1), or "" when name is no partition.
func (s *Scanner) wholeDisk(name string) string {
	if name == "" {
		return ""
	}
	dir, err := filepath.EvalSymlinks(filepath.Join(s.sysDir(), "class", "block", name))
	if err != nil {
		return ""
	}
	if _, err := os.Stat(filepath.Join(dir, "partition")); err != nil {
		return ""
	}
	return filepath.Base(filepath.Dir(dir))
}

// ProbeUse fills the Use of every publishable block entry: its partitions,
// holders and read-only flag from sysfs, and, for a device with neither
// partitions nor holders (a multipath member is never read), whether an
// exclusive open fails (busy) and what signature its first and last
// sectors hold, each probe bounded by DefaultProbeTimeout.
func (s *Scanner) ProbeUse(ctx context.Context, entries []Entry) {
	for i := range entries {
		e := &entries[i]
		if e.Kind != report.KindBlock || e.Skip != "" || e.Dev == "" || e.DevNode == "" || e.Use != nil {
			continue
		}
		dir := filepath.Join(s.sysDir(), "class", "block", e.Dev)
		u := &report.Disk{Name: e.Dev, Size: e.Capacity, ReadOnly: readFlag(filepath.Join(dir, "ro")),
			Holders: countEntries(filepath.Join(dir, "holders"))}
		if e.Whole == "" {
			u.Partitions = countPartitions(dir)
		}
		if u.Holders == 0 && u.Partitions == 0 {
			r := probeWithin(ctx, OpenDevice, e.DevNode, DefaultProbeTimeout)
			u.Busy, u.Signature = r.busy, r.signature
			if u.Signature == "" {
				u.Signature = report.SignatureUnknown
			}
		}
		e.Use = u
	}
}
