package discovery

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/nodeplug/nodeplug/pkg/localpv/config"
	"github.com/nodeplug/nodeplug/pkg/localpv/identity"
	"github.com/nodeplug/nodeplug/pkg/localpv/report"
)

// Skip reasons reported for entries that match but cannot be published.
const (
	SkipNotMountPoint  = "NotMountPoint"
	SkipSymlink        = "Symlink"
	SkipNotBlockDevice = "NotBlockDevice"
	SkipDirectory      = "DirectoryInBlockClass"
	SkipDevice         = "DeviceNeedsFsType"
	SkipUnsupported    = "UnsupportedFileType"
	SkipUnreadable     = "Unreadable"
	SkipZeroCapacity   = "ZeroCapacity"
)

// ClassSpec is what a discovery Job is told about one class. The master
// derives it from the configuration and passes it as a JSON argument.
type ClassSpec struct {
	Name        string `json:"name"`
	MountDir    string `json:"mountDir"`
	VolumeMode  string `json:"volumeMode"`
	NamePattern string `json:"namePattern"`
	// Devices says whether block devices are publishable in this class.
	Devices bool `json:"devices,omitempty"`
	// DiskSelector, when set, chooses whole disks by their properties
	// among those with a link in MountDir.
	DiskSelector *config.DiskSelector `json:"diskSelector,omitempty"`
}

// SpecFor returns the ClassSpec of a configured class.
func SpecFor(name string, mc config.MountConfig) ClassSpec {
	return ClassSpec{Name: name, MountDir: mc.MountDir, VolumeMode: mc.VolumeMode,
		NamePattern: mc.NamePattern, Devices: mc.AcceptsDevices(), DiskSelector: mc.DiskSelector}
}

// Entry is one matching entry of a class directory.
type Entry struct {
	Name string
	// Kind is set for publishable entries.
	Kind report.VolumeKind
	// Capacity is set when sizes were requested.
	Capacity int64
	// Skip is set for entries that cannot be published.
	Skip string
	// Disk holds the properties of a disk chosen by a disk selector.
	Disk *report.Disk
	// ID is the identity of what a publishable entry leads to now, when it
	// can be read; IDErr says why it could not.
	ID    identity.ID
	IDErr error
	// Dev is the kernel name of the device a block entry resolves to, or
	// of the block device a directory's file system lives on; Whole is the
	// whole disk's when Dev is a partition.
	Dev, Whole string
	// Use is how a block entry's device is in use (ProbeUse fills it).
	Use *report.Disk
	// DevNode is the device node a block entry resolves to.
	DevNode string
	// FSDev is a directory entry's st_dev, to tell its file system from
	// others that report its identity.
	FSDev uint64
}

// Scanner reads class directories. Its fields are seams for tests.
type Scanner struct {
	// DevDir is where a block symlink's target must lie; default /dev.
	DevDir string
	// SysDir is the sysfs root used for device sizes; default /sys.
	SysDir string
}

// ScanClass lists the matching entries of a class directory in name order.
// mountPoints holds the mount points visible to this process. With sizes,
// every publishable entry gets its capacity and its identity (and a block
// entry its device's kernel name).
func (s *Scanner) ScanClass(spec ClassSpec, mountPoints map[string]bool, sizes bool) ([]Entry, error) {
	dirents, err := os.ReadDir(spec.MountDir)
	if err != nil {
		return nil, fmt.Errorf("failed to read class directory %s: %w", spec.MountDir, err)
	}
	var out []Entry
	for _, d := range dirents {
		if !config.MatchName(spec.NamePattern, d.Name()) {
			continue
		}
		p := filepath.Join(spec.MountDir, d.Name())
		e, dev := s.classify(spec, p, mountPoints)
		e.Name = d.Name()
		if e.Skip == "" && sizes {
			e.Capacity, dev, err = s.capacity(e.Kind, p, dev)
			if err != nil {
				e.Kind, e.Skip = "", SkipUnreadable
			} else if e.Capacity <= 0 {
				e.Kind, e.Skip = "", SkipZeroCapacity
			} else {
				s.identify(&e, p, dev)
			}
		}
		out = append(out, e)
	}
	return out, nil
}

// classify says what the entry at p is; for a symlink to a block device it
// also returns the device it resolves to, so that it is resolved once.
func (s *Scanner) classify(spec ClassSpec, p string, mountPoints map[string]bool) (Entry, string) {
	fi, err := os.Lstat(p)
	if err != nil {
		return Entry{Skip: SkipUnreadable}, ""
	}
	mode := fi.Mode()
	switch {
	case mode.IsDir():
		if spec.VolumeMode == config.VolumeModeBlock {
			return Entry{Skip: SkipDirectory}, ""
		}
		if !mountPoints[p] {
			return Entry{Skip: SkipNotMountPoint}, ""
		}
		return Entry{Kind: report.KindDirectory}, ""
	case mode&fs.ModeSymlink != 0:
		if !spec.Devices {
			return Entry{Skip: SkipSymlink}, ""
		}
		dev, err := s.resolveDevice(p)
		if err != nil {
			return Entry{Skip: SkipNotBlockDevice}, ""
		}
		return Entry{Kind: report.KindBlock}, dev
	case mode&fs.ModeDevice != 0 && mode&fs.ModeCharDevice == 0:
		if !spec.Devices {
			return Entry{Skip: SkipDevice}, ""
		}
		return Entry{Kind: report.KindBlock}, ""
	}
	return Entry{Skip: SkipUnsupported}, ""
}

// identify fills the identity of a publishable entry at p: a directory's
// file system and file handle, a block entry's device.
func (s *Scanner) identify(e *Entry, p, dev string) {
	if e.Kind == report.KindDirectory {
		e.ID, e.IDErr = identity.Directory(p)
		e.Dev, e.Whole = s.fileSystemDevice(p)
		var st unix.Stat_t
		if e.ID != "" && unix.Stat(p, &st) == nil {
			e.FSDev = st.Dev
		}
		return
	}
	e.DevNode = dev
	e.ID, e.Dev, e.IDErr = s.identityOf(dev)
	e.Whole = s.wholeDisk(e.Dev)
}

// deviceIdentity resolves a block entry or held path to its device, and
// returns the device's identity and kernel name. The name is returned
// when only the identity could not be read.
func (s *Scanner) deviceIdentity(p string) (identity.ID, string, error) {
	dev, err := s.resolveDevice(p)
	if err != nil {
		return "", "", err
	}
	return s.identityOf(dev)
}

// identityOf returns the identity and kernel name of a resolved device node.
func (s *Scanner) identityOf(dev string) (identity.ID, string, error) {
	id, name, err := identity.Device(s.sysDir(), dev)
	if err == nil && id == "" {
		err = fmt.Errorf("device %s reports no identity (no WWN, serial or backing file)", name)
	}
	return id, name, err
}

// ResolveDevice follows a block entry to its device node. A symlink must end
// at a block device below DevDir; a device node is returned as is.
func (s *Scanner) resolveDevice(p string) (string, error) {
	target, err := filepath.EvalSymlinks(p)
	if err != nil {
		return "", fmt.Errorf("failed to resolve %s: %w", p, err)
	}
	if target != p && !config.Within(target, s.devDir()) {
		return "", fmt.Errorf("%s points to %s, outside %s", p, target, s.devDir())
	}
	fi, err := os.Stat(target)
	if err != nil {
		return "", fmt.Errorf("failed to stat %s: %w", target, err)
	}
	if fi.Mode()&fs.ModeDevice == 0 || fi.Mode()&fs.ModeCharDevice != 0 {
		return "", fmt.Errorf("%s is not a block device", target)
	}
	return target, nil
}

// ResolveDevice is exported for the cleanup Job, which applies the same rule.
func (s *Scanner) ResolveDevice(p string) (string, error) { return s.resolveDevice(p) }

// capacity returns an entry's size and, for a block entry, the device it
// resolves to (dev when classify resolved it already).
func (s *Scanner) capacity(kind report.VolumeKind, p, dev string) (int64, string, error) {
	if kind == report.KindDirectory {
		var st unix.Statfs_t
		if err := unix.Statfs(p, &st); err != nil {
			return 0, "", fmt.Errorf("failed to statfs %s: %w", p, err)
		}
		return int64(st.Blocks) * st.Bsize, "", nil
	}
	if dev == "" {
		var err error
		if dev, err = s.resolveDevice(p); err != nil {
			return 0, "", err
		}
	}
	size, err := s.deviceSize(dev)
	return size, dev, err
}

// deviceSize reads the size of a block device from sysfs, which needs no
// access to the device itself.
func (s *Scanner) deviceSize(dev string) (int64, error) {
	var st unix.Stat_t
	if err := unix.Stat(dev, &st); err != nil {
		return 0, fmt.Errorf("failed to stat %s: %w", dev, err)
	}
	p := filepath.Join(s.sysDir(), "dev", "block", fmt.Sprintf("%d:%d", unix.Major(st.Rdev), unix.Minor(st.Rdev)), "size")
	b, err := os.ReadFile(p)
	if err != nil {
		return 0, fmt.Errorf("failed to read device size: %w", err)
	}
	var sectors int64
	if _, err := fmt.Sscan(strings.TrimSpace(string(b)), &sectors); err != nil {
		return 0, fmt.Errorf("failed to parse %s: %w", p, err)
	}
	if sectors < 0 || sectors > 1<<53 {
		return 0, errors.New("device size out of range")
	}
	return sectors * 512, nil
}

func (s *Scanner) devDir() string {
	if s.DevDir != "" {
		return s.DevDir
	}
	return "/dev"
}

func (s *Scanner) sysDir() string {
	if s.SysDir != "" {
		return s.SysDir
	}
	return "/sys"
}
