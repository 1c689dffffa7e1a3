//go:build e2e

package e2e

import (
	"os"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// unmountAll unmounts every mount at or below dir, deepest first.
func unmountAll(t testing.TB, dir string) {
	for i := 0; i < 5; i++ {
		info, err := os.ReadFile("/proc/self/mountinfo")
		if err != nil {
			t.Errorf("read mountinfo: %v", err)
			return
		}
		var found []string
		for _, line := range strings.Split(string(info), "\n") {
			f := strings.Fields(line)
			if len(f) > 4 && (f[4] == dir || strings.HasPrefix(f[4], dir+"/")) {
				found = append(found, f[4])
			}
		}
		if len(found) == 0 {
			return
		}
		for _, m := range slices.Backward(found) {
			_ = unix.Unmount(m, unix.MNT_DETACH)
		}
	}
	t.Errorf("mounts remain below %s", dir)
}
