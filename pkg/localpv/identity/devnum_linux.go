//go:build linux

package identity

import (
	"fmt"

	"golang.org/x/sys/unix"
)

func deviceNumber(devPath string) (uint32, uint32, error) {
	var st unix.Stat_t
	if err := unix.Stat(devPath, &st); err != nil {
		return 0, 0, fmt.Errorf("failed to stat %s: %w", devPath, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFBLK {
		return 0, 0, fmt.Errorf("%s is not a block device", devPath)
	}
	return unix.Major(st.Rdev), unix.Minor(st.Rdev), nil
}
