//go:build linux

package identity

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nodeplug/nodeplug/pkg/util/testutil"
)

// TestDeviceLoop reads the identity of a real loop device from sysfs.
func TestDeviceLoop(t *testing.T) {
	testutil.RequireRoot(t)
	testutil.RequireCommand(t, "losetup")
	img := filepath.Join(t.TempDir(), "disk.img")
	if err := os.WriteFile(img, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(img, 8<<20); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("losetup", "-f", "--show", img).CombinedOutput()
	if err != nil {
		testutil.MissingCapability(t, "losetup: %v: %s", err, out)
	}
	dev := strings.TrimSpace(string(out))
	t.Cleanup(func() { _ = exec.Command("losetup", "-d", dev).Run() })
	id, name, err := Device("", dev)
	if err != nil {
		t.Fatal(err)
	}
	if name != filepath.Base(dev) || id != Loop(img, 0, 0) {
		t.Errorf("Device(%s) = %q, %q; want %q, %q", dev, id, name, Loop(img, 0, 0), filepath.Base(dev))
	}
	if _, _, err := Device("", img); err == nil {
		t.Error("a regular file has a device identity")
	}
}
