package cleanup

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
	"k8s.io/klog/v2/ktesting"

	"github.com/nodeplug/nodeplug/pkg/localpv/identity"
	"github.com/nodeplug/nodeplug/pkg/localpv/jobs"
	"github.com/nodeplug/nodeplug/pkg/localpv/report"
	"github.com/nodeplug/nodeplug/pkg/localpv/testutil"
	utiltestutil "github.com/nodeplug/nodeplug/pkg/util/testutil"
)

// mountExt4 makes an ext4 file system (with a UUID) on a new loop device
// and mounts it at dir until the test ends.
func mountExt4(t *testing.T, dir string) {
	t.Helper()
	utiltestutil.RequireCommand(t, "mkfs.ext4")
	dev := testutil.LoopDevice(t, 16<<20)
	if out, err := exec.Command("mkfs.ext4", "-q", "-F", dev).CombinedOutput(); err != nil {
		t.Fatalf("mkfs.ext4: %v: %s", err, out)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount(dev, dir, "ext4", 0, ""); err != nil {
		t.Fatalf("mount: %v", err)
	}
	t.Cleanup(func() { _ = unix.Unmount(dir, unix.MNT_DETACH) })
}

// TestCleanDirectoryReadsTheRecordedForm: discovery, unprivileged on ext4
// before Linux 6.0 without a udev record, recorded the file handle with
// the device's identity (fhdisk); a cleanup that can read the superblock
// checks that form, so it empties the PV's own disk and refuses another
// one. Before, it read fs and refused the PV's own disk.
func TestCleanDirectoryReadsTheRecordedForm(t *testing.T) {
	testutil.RequireRoot(t)
	root := t.TempDir()
	vol, other := filepath.Join(root, "vol1"), filepath.Join(root, "vol2")
	mountExt4(t, vol)
	mountExt4(t, other)
	restore := identity.SetUnavailable(identity.SourceGenericIoctl | identity.SourceFSIoctl | identity.SourceSuperblock | identity.SourceUdev)
	own, errOwn := identity.Directory(vol)
	another, errOther := identity.Directory(other)
	restore()
	if errOwn != nil || errOther != nil || own.Kind() != identity.KindFileHandleOnDisk {
		t.Fatalf("discovery's identities %q (%v), %q (%v), want fhdisk", own, errOwn, another, errOther)
	}
	defer identity.SetUnavailable(identity.SourceGenericIoctl | identity.SourceFSIoctl)()
	mustWrite(t, filepath.Join(vol, "data"), "tenant")
	_, ctx := ktesting.NewTestContext(t)
	c := realCleaner()
	err := c.Clean(ctx, Request{Kind: report.KindDirectory, MountDir: root, Path: vol, Expected: Expected{DiskID: another}})
	var mm *MismatchError
	if !errors.As(err, &mm) || mm.What != jobs.CleanupMismatchDisk || mm.Found != string(own) {
		t.Fatalf("want a disk mismatch finding %s, got %v", own, err)
	}
	if b, err := os.ReadFile(filepath.Join(vol, "data")); err != nil || string(b) != "tenant" {
		t.Fatalf("a mismatched volume was touched: %q, %v", b, err)
	}
	if err := c.Clean(ctx, Request{Kind: report.KindDirectory, MountDir: root, Path: vol, Expected: Expected{DiskID: own}}); err != nil {
		t.Fatalf("Clean of the PV's own disk: %v", err)
	}
	if b, err := os.ReadFile(filepath.Join(vol, "data")); err == nil {
		t.Fatalf("the PV's own disk was not emptied: %q", b)
	}
}
