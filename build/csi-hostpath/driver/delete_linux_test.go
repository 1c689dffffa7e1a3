package driver

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"golang.org/x/sys/unix"
	"google.golang.org/grpc/codes"

	utiltestutil "github.com/nodeplug/nodeplug/pkg/util/testutil"
)

// TestDeleteVolumeDoesNotCrossMounts (N7): a file system mounted inside a
// volume (a tenant's Bidirectional bind mount that leaked to the host)
// refuses DeleteVolume, and the host's files behind it are kept; once it is
// unmounted the volume is deleted. A symlink the tenant left is removed,
// never its target.
func TestDeleteVolumeDoesNotCrossMounts(t *testing.T) {
	utiltestutil.RequireRoot(t)
	d := startDriver(t, nil)
	ctx := ctxFor(t)
	_, err := d.ctrl.CreateVolume(ctx, &csi.CreateVolumeRequest{Name: "pvc-leak", VolumeCapabilities: []*csi.VolumeCapability{rwo}})
	wantCode(t, err, codes.OK)
	vol := filepath.Join(d.cfg.DataDir, "pvc-leak")
	outside := filepath.Join(t.TempDir(), "host-file")
	if err := os.WriteFile(outside, []byte("host"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Dir(outside), filepath.Join(vol, "escape")); err != nil {
		t.Fatal(err)
	}
	leak := filepath.Join(vol, "leak")
	if err := os.Mkdir(leak, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("tmpfs", leak, "tmpfs", 0, "size=1m"); err != nil {
		utiltestutil.MissingCapability(t, "cannot mount tmpfs: %v", err)
	}
	mounted := true
	t.Cleanup(func() {
		if mounted {
			_ = unix.Unmount(leak, unix.MNT_DETACH)
		}
	})
	behind := filepath.Join(leak, "host-data")
	if err := os.WriteFile(behind, []byte("host"), 0o644); err != nil {
		t.Fatal(err)
	}

	_, err = d.ctrl.DeleteVolume(ctx, &csi.DeleteVolumeRequest{VolumeId: "pvc-leak"})
	wantCode(t, err, codes.Internal)
	for _, p := range []string{behind, outside} {
		if b, err := os.ReadFile(p); err != nil || string(b) != "host" {
			t.Errorf("DeleteVolume through a mount touched %s: %q, %v", p, b, err)
		}
	}

	if err := unix.Unmount(leak, 0); err != nil {
		t.Fatal(err)
	}
	mounted = false
	_, err = d.ctrl.DeleteVolume(ctx, &csi.DeleteVolumeRequest{VolumeId: "pvc-leak"})
	wantCode(t, err, codes.OK)
	if _, err := os.Lstat(vol); !os.IsNotExist(err) {
		t.Errorf("volume directory after DeleteVolume: %v", err)
	}
	if b, err := os.ReadFile(outside); err != nil || string(b) != "host" {
		t.Errorf("the symlink's target was touched: %q, %v", b, err)
	}
}
