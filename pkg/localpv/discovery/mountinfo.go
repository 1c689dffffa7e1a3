package discovery

import (
	"fmt"
	"strconv"
	"strings"

	"k8s.io/mount-utils"
)

// SelfMountInfo is the mount table of the calling process's namespace.
const SelfMountInfo = "/proc/self/mountinfo"

// MountPoints returns the set of mount points listed in a mountinfo file,
// with the kernel's octal escapes (\040 for a space) decoded.
func MountPoints(mountInfoPath string) (map[string]bool, error) {
	infos, err := mount.ParseMountInfo(mountInfoPath)
	if err != nil {
		return nil, fmt.Errorf("failed to parse %s: %w", mountInfoPath, err)
	}
	out := make(map[string]bool, len(infos))
	for _, mi := range infos {
		out[unescapeOctal(mi.MountPoint)] = true
	}
	return out, nil
}

func unescapeOctal(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
