package testutil

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	utiltestutil "github.com/nodeplug/nodeplug/pkg/util/testutil"
)

// RequireRoot skips the test (fails it under CI=true) unless it runs as
// root.
func RequireRoot(t *testing.T) {
	t.Helper()
	utiltestutil.RequireRoot(t)
}

// MountTmpfs creates dir and mounts a tmpfs of the given size on it.
func MountTmpfs(t *testing.T, dir string, sizeBytes int64) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "size="+strconv.FormatInt(sizeBytes, 10)); err != nil {
		utiltestutil.MissingCapability(t, "cannot mount tmpfs on %s: %v", dir, err)
		return
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
	return attachLoop(t, t.TempDir(), sizeBytes)
}

// LoopDeviceWithoutDiscard is LoopDevice with a device that does not
// support discard, as many disks do not: its backing file is on a ramfs,
// whose files cannot punch holes.
func LoopDeviceWithoutDiscard(t *testing.T, sizeBytes int64) string {
	t.Helper()
	dir := t.TempDir()
	if err := unix.Mount("ramfs", dir, "ramfs", 0, ""); err != nil {
		utiltestutil.MissingCapability(t, "cannot mount ramfs on %s: %v", dir, err)
		return ""
	}
	t.Cleanup(func() {
		if err := unix.Unmount(dir, unix.MNT_DETACH); err != nil {
			t.Errorf("failed to unmount %s: %v", dir, err)
		}
	})
	return attachLoop(t, dir, sizeBytes)
}

// attachLoop attaches a new sparse file in dir to a loop device, and
// detaches it when the test ends.
func attachLoop(t *testing.T, dir string, sizeBytes int64) string {
	t.Helper()
	utiltestutil.RequireCommand(t, "losetup")
	img := filepath.Join(dir, "disk.img")
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
		utiltestutil.MissingCapability(t, "cannot attach loop device: %v: %s", err, out)
		return ""
	}
	dev := strings.TrimSpace(string(out))
	t.Cleanup(func() {
		if out, err := exec.Command("losetup", "--detach", dev).CombinedOutput(); err != nil {
			t.Errorf("failed to detach %s: %v: %s", dev, err, out)
		}
	})
	return dev
}
