// Package testutil creates real mounts and loop devices for the node-side
// tests, and removes them when the test ends. It needs root; callers skip
// when RequireRoot says so.
package testutil

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// RequireRoot skips the test unless it runs as root with mount rights.
func RequireRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to mount")
	}
}

// MountTmpfs creates dir and mounts a tmpfs of the given size on it.
func MountTmpfs(t *testing.T, dir string, sizeBytes int64) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "size="+strconv.FormatInt(sizeBytes, 10)); err != nil {
		t.Skipf("cannot mount tmpfs on %s: %v", dir, err)
	}
	t.Cleanup(func() {
		if err := unix.Unmount(dir, unix.MNT_DETACH); err != nil {
			t.Errorf("failed to unmount %s: %v", dir, err)
		}
	})
}

// LoopDevice attaches a sparse file of the given size to a loop device and
// returns the device path.
func LoopDevice(t *testing.T, sizeBytes int64) string {
	t.Helper()
	if _, err := exec.LookPath("losetup"); err != nil {
		t.Skip("losetup not found")
	}
	img := filepath.Join(t.TempDir(), "disk.img")
	f, err := os.Create(img)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(sizeBytes); err != nil {
		t.Fatal(err)
	}
	_ = f.Close()
	out, err := exec.Command("losetup", "--find", "--show", img).CombinedOutput()
	if err != nil {
		t.Skipf("cannot attach loop device: %v: %s", err, out)
	}
	dev := strings.TrimSpace(string(out))
	t.Cleanup(func() {
		if out, err := exec.Command("losetup", "--detach", dev).CombinedOutput(); err != nil {
			t.Errorf("failed to detach %s: %v: %s", dev, err, out)
		}
	})
	return dev
}
