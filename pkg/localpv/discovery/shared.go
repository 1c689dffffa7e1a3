package discovery

import (
	"fmt"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/nodeplug/nodeplug/pkg/localpv/identity"
	"github.com/nodeplug/nodeplug/pkg/localpv/report"
)

// markSharedDirectories gives the directory entries whose identity a
// directory on another file system reports too (a cloned file system with
// its UUID) the kernel name of their file system's device, so that the
// master sees two devices with one identity and publishes neither. The same
// directory under two paths (one st_dev) is one disk and stays unmarked.
func (s *Scanner) markSharedDirectories(classes [][]Entry) {
	devs := map[identity.ID]map[uint64]bool{}
	for _, entries := range classes {
		for _, e := range entries {
			if e.Kind == report.KindDirectory && e.ID != "" && e.FSDev != 0 {
				if devs[e.ID] == nil {
					devs[e.ID] = map[uint64]bool{}
				}
				devs[e.ID][e.FSDev] = true
			}
		}
	}
	for _, entries := range classes {
		for i := range entries {
			e := &entries[i]
			if e.Kind == report.KindDirectory && len(devs[e.ID]) > 1 {
				e.Dev = s.deviceName(e.FSDev)
			}
		}
	}
}

// deviceName returns the kernel name of device number dev, or its number
// where sysfs has no block device of that number (an anonymous device).
func (s *Scanner) deviceName(dev uint64) string {
	num := fmt.Sprintf("%d:%d", unix.Major(dev), unix.Minor(dev))
	if p, err := filepath.EvalSymlinks(filepath.Join(s.sysDir(), "dev", "block", num)); err == nil {
		return filepath.Base(p)
	}
	return num
}
