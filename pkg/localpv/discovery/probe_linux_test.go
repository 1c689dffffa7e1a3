//go:build linux

package discovery

import (
	"os/exec"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/nodeplug/nodeplug/pkg/localpv/testutil"
	utiltestutil "github.com/nodeplug/nodeplug/pkg/util/testutil"
)

// TestProbeRealDevice probes a real loop device holding an ext4: free, then
// held exclusively by another opener, then mounted, then free again.
func TestProbeRealDevice(t *testing.T) {
	utiltestutil.RequireMount(t)
	utiltestutil.RequireCommand(t, "mkfs.ext4")
	dev := testutil.LoopDevice(t, 64<<20)
	if out, err := exec.Command("mkfs.ext4", "-q", "-F", dev).CombinedOutput(); err != nil {
		t.Fatalf("mkfs.ext4 %s: %v: %s", dev, err, out)
	}
	check := func(step string, wantBusy bool) {
		t.Helper()
		got := probe(OpenDevice, dev)
		if got.err != nil || got.signature != "ext4" || got.busy != wantBusy {
			t.Errorf("%s: probe = %+v, want ext4, busy %v", step, got, wantBusy)
		}
	}
	check("unmounted", false)

	fd, err := unix.Open(dev, unix.O_RDONLY|unix.O_EXCL|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatalf("exclusive open of %s: %v", dev, err)
	}
	check("held exclusively", true)
	_ = unix.Close(fd)

	dir := t.TempDir()
	if err := unix.Mount(dev, dir, "ext4", unix.MS_RDONLY, ""); err != nil {
		utiltestutil.MissingCapability(t, "cannot mount ext4 from %s: %v", dev, err)
	}
	mounted := true
	t.Cleanup(func() {
		if mounted {
			_ = unix.Unmount(dir, unix.MNT_DETACH)
		}
	})
	check("mounted", true)
	if err := unix.Unmount(dir, 0); err != nil {
		t.Fatal(err)
	}
	mounted = false
	check("unmounted again", false)
}
