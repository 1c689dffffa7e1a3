package cleanup

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
	"k8s.io/klog/v2/ktesting"

	"github.com/nodeplug/nodeplug/pkg/localpv/discovery"
	"github.com/nodeplug/nodeplug/pkg/localpv/identity"
	"github.com/nodeplug/nodeplug/pkg/localpv/report"
	"github.com/nodeplug/nodeplug/pkg/localpv/testutil"
	utiltestutil "github.com/nodeplug/nodeplug/pkg/util/testutil"
)

// swapAfterCheck is the node's real Checker, and once the disk check has
// passed it changes what the volume's path leads to: the window between
// the check and the wipe.
type swapAfterCheck struct {
	NodeChecker
	swap func()
}

func (s *swapAfterCheck) CheckDisk(ctx context.Context, want identity.ID, vol Volume) error {
	if err := s.NodeChecker.CheckDisk(ctx, want, vol); err != nil {
		return err
	}
	s.swap()
	return nil
}

// TestCleanBlockSwappedAfterCheckIsNotWiped (N6): the PV's disk is loop
// device A, reached through a device node in a private /dev. After the
// identity check the node is re-created for loop device B, as when a
// hot-swapped disk reuses the kernel name. The cleaner command wipes A, the
// device that was checked, and B keeps every byte.
func TestCleanBlockSwappedAfterCheckIsNotWiped(t *testing.T) {
	testutil.RequireRoot(t)
	const size = 1 << 20
	a, b := testutil.LoopDevice(t, size), testutil.LoopDevice(t, size)
	for dev, fill := range map[string]byte{a: 0xAA, b: 0xBB} {
		if err := os.WriteFile(dev, bytes.Repeat([]byte{fill}, size), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	idA, _, err := identity.Device("", a)
	if err != nil {
		t.Fatal(err)
	}
	devDir := filepath.Join(t.TempDir(), "dev")
	testutil.MountTmpfs(t, devDir, 1<<20) // device nodes work on it: not nodev
	node := filepath.Join(devDir, "sdz")
	mknodLike(t, node, a)
	root := t.TempDir()
	link := filepath.Join(root, "disk1")
	if err := os.Symlink(node, link); err != nil {
		t.Fatal(err)
	}
	checker := &swapAfterCheck{swap: func() {
		if err := os.Remove(node); err != nil {
			t.Error(err)
		}
		mknodLike(t, node, b)
	}}
	c := NewCleaner(&discovery.Scanner{DevDir: devDir}, checker, discovery.SelfMountInfo, &bytes.Buffer{})
	wipeCmd := []string{"dd", "if=/dev/zero", "of=$(LOCAL_PV_BLKDEVICE)", "bs=64k", "count=16", "conv=fsync"}
	_, ctx := ktesting.NewTestContext(t)
	err = c.Clean(ctx, Request{Kind: report.KindBlock, MountDir: root, Path: link, Command: wipeCmd, Expected: Expected{DiskID: idA}})
	if err != nil {
		t.Fatalf("Clean: %v", err)
	}
	wantFilled(t, b, 0xBB)
	wantFilled(t, a, 0)
}

// TestCleanDirectorySwappedAfterCheckIsNotEmptied (N6): after the identity
// check of the PV's mount A, another file system B is mounted over the
// volume's path. The walk starts at the checked directory: A is emptied, B
// keeps its files.
func TestCleanDirectorySwappedAfterCheckIsNotEmptied(t *testing.T) {
	testutil.RequireRoot(t)
	root := t.TempDir()
	vol := filepath.Join(root, "vol1")
	testutil.MountTmpfs(t, vol, 1<<20)
	mustWrite(t, filepath.Join(vol, "data"), "old tenant")
	own, err := identity.Directory(vol)
	if err != nil {
		t.Fatal(err)
	}
	a, err := os.Open(vol)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = a.Close() }()
	checker := &swapAfterCheck{swap: func() {
		testutil.MountTmpfs(t, vol, 1<<20)
		mustWrite(t, filepath.Join(vol, "other"), "another disk")
	}}
	c := NewCleaner(&discovery.Scanner{}, checker, discovery.SelfMountInfo, &bytes.Buffer{})
	_, ctx := ktesting.NewTestContext(t)
	if err := c.Clean(ctx, Request{Kind: report.KindDirectory, MountDir: root, Path: vol, Expected: Expected{DiskID: own}}); err != nil {
		t.Fatalf("Clean: %v", err)
	}
	if b, err := os.ReadFile(filepath.Join(vol, "other")); err != nil || string(b) != "another disk" {
		t.Errorf("the file system mounted after the check was touched: %q, %v", b, err)
	}
	if names, err := a.Readdirnames(-1); err != nil || len(names) != 0 {
		t.Errorf("the checked file system still holds %q (%v)", names, err)
	}
}

// mknodLike creates at p a block device node with the device number of dev.
func mknodLike(t *testing.T, p, dev string) {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Stat(dev, &st); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mknod(p, unix.S_IFBLK|0o600, int(st.Rdev)); err != nil {
		t.Fatalf("mknod %s: %v", p, err)
	}
}

// TestCleanBlockCommandMayClaimTheDevice: the checked device is passed
// without the cleanup's exclusive hold, so commands that open it
// exclusively, as blkdiscard and wipefs do (the shipped class's
// blockCleanerCommand is blkdiscard), still work on /proc/self/fd/3.
func TestCleanBlockCommandMayClaimTheDevice(t *testing.T) {
	testutil.RequireRoot(t)
	utiltestutil.RequireCommand(t, "blkdiscard", "busybox")
	const size = 1 << 20
	for name, command := range map[string][]string{
		"util-linux blkdiscard": {"blkdiscard", "$(LOCAL_PV_BLKDEVICE)"},
		"busybox blkdiscard":    {"busybox", "blkdiscard", "$(LOCAL_PV_BLKDEVICE)"},
	} {
		t.Run(name, func(t *testing.T) {
			dev := testutil.LoopDevice(t, size)
			if err := os.WriteFile(dev, bytes.Repeat([]byte{0xAA}, size), 0o600); err != nil {
				t.Fatal(err)
			}
			id, root, link := linkedDisk(t, dev)
			_, ctx := ktesting.NewTestContext(t)
			err := realCleaner().Clean(ctx, Request{Kind: report.KindBlock, MountDir: root, Path: link, Command: command, Expected: Expected{DiskID: id}})
			if err != nil {
				t.Fatalf("Clean: %v", err)
			}
			wantFilled(t, dev, 0)
		})
	}
}

// TestCleanBlockRefusesADeviceInUse: the cleanup opens the device
// exclusively before its check, so a device that is mounted (the PV's disk
// mounted on the host by hand, say) is refused and no command runs.
func TestCleanBlockRefusesADeviceInUse(t *testing.T) {
	testutil.RequireRoot(t)
	utiltestutil.RequireCommand(t, "mkfs.ext4")
	dev := testutil.LoopDevice(t, 8<<20)
	if out, err := exec.Command("mkfs.ext4", "-q", "-F", dev).CombinedOutput(); err != nil {
		t.Fatalf("mkfs.ext4: %v: %s", err, out)
	}
	mnt := t.TempDir()
	if err := unix.Mount(dev, mnt, "ext4", 0, ""); err != nil {
		t.Fatalf("mount: %v", err)
	}
	t.Cleanup(func() { _ = unix.Unmount(mnt, unix.MNT_DETACH) })
	id, root, link := linkedDisk(t, dev)
	ran := filepath.Join(t.TempDir(), "ran")
	_, ctx := ktesting.NewTestContext(t)
	err := realCleaner().Clean(ctx, Request{Kind: report.KindBlock, MountDir: root, Path: link, Command: []string{"touch", ran}, Expected: Expected{DiskID: id}})
	if err == nil || !strings.Contains(err.Error(), "is in use") {
		t.Fatalf("want a refusal of the mounted device, got %v", err)
	}
	if _, err := os.Stat(ran); err == nil {
		t.Error("the cleaner command ran on a mounted device")
	}
}

// linkedDisk returns the identity of block device dev and a new class
// directory root whose entry link (disk1) leads to dev.
func linkedDisk(t *testing.T, dev string) (id identity.ID, root, link string) {
	t.Helper()
	id, _, err := identity.Device("", dev)
	if err != nil {
		t.Fatal(err)
	}
	root = t.TempDir()
	link = filepath.Join(root, "disk1")
	if err := os.Symlink(dev, link); err != nil {
		t.Fatal(err)
	}
	return id, root, link
}
