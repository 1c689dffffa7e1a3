package discovery

import (
	"encoding/binary"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
	"k8s.io/klog/v2/ktesting"

	"github.com/nodeplug/nodeplug/pkg/localpv/report"
	"github.com/nodeplug/nodeplug/pkg/localpv/testutil"
	utiltestutil "github.com/nodeplug/nodeplug/pkg/util/testutil"
)

// TestDiscoverReportsWhatPublishedOnceNeeds (N3 a, b, d) runs discovery on
// real loop devices: a whole disk with a partition, both linked in a plain
// Block class; an ext4 disk mounted as a directory volume and also linked
// in the Block class; and a blank disk. The report says which whole disk a
// partition is on, which device a directory's file system lives on, and
// how each block entry is in use, so that the master publishes one disk
// once.
func TestDiscoverReportsWhatPublishedOnceNeeds(t *testing.T) {
	testutil.RequireRoot(t)
	utiltestutil.RequireCommand(t, "mkfs.ext4")
	whole := partitionedLoop(t)
	part := whole + "p1"
	mounted := testutil.LoopDevice(t, 8<<20)
	if out, err := exec.Command("mkfs.ext4", "-q", "-F", mounted).CombinedOutput(); err != nil {
		t.Fatalf("mkfs.ext4: %v: %s", err, out)
	}
	blank := testutil.LoopDevice(t, 8<<20)
	root := t.TempDir()
	fsDir, blkDir := filepath.Join(root, "fs"), filepath.Join(root, "blk")
	vol := filepath.Join(fsDir, "vol-m")
	if err := os.MkdirAll(vol, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount(mounted, vol, "ext4", 0, ""); err != nil {
		t.Fatalf("mount %s: %v", mounted, err)
	}
	t.Cleanup(func() { _ = unix.Unmount(vol, unix.MNT_DETACH) })
	if err := os.MkdirAll(blkDir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, dev := range map[string]string{"whole": whole, "part": part, "mounted": mounted, "blank": blank} {
		mustSymlink(t, dev, filepath.Join(blkDir, name))
	}
	classes := []ClassSpec{
		{Name: "fs", MountDir: fsDir, VolumeMode: "Filesystem", NamePattern: "*"},
		{Name: "blk", MountDir: blkDir, VolumeMode: "Block", NamePattern: "*", Devices: true},
	}
	_, ctx := ktesting.NewTestContext(t)
	r, err := NewDiscoverer(&Scanner{}, SelfMountInfo).Discover(ctx, "node-1", classes, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]report.Volume{}
	for _, c := range r.Classes {
		for _, v := range c.Volumes {
			got[c.Name+"/"+v.Name] = v
		}
	}
	base := filepath.Base
	tests := []struct {
		name, entry, dev, whole string
		use                     *report.Disk
	}{
		{name: "whole disk with a partition, not read", entry: "blk/whole", dev: base(whole),
			use: &report.Disk{Name: base(whole), Partitions: 1}},
		{name: "partition names its disk", entry: "blk/part", dev: base(part), whole: base(whole),
			use: &report.Disk{Name: base(part), Signature: report.SignatureNone}},
		{name: "mounted disk is busy", entry: "blk/mounted", dev: base(mounted),
			use: &report.Disk{Name: base(mounted), Busy: true, Signature: "ext4"}},
		{name: "blank disk", entry: "blk/blank", dev: base(blank),
			use: &report.Disk{Name: base(blank), Signature: report.SignatureNone}},
		{name: "directory names its file system's device", entry: "fs/vol-m", dev: base(mounted)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v, ok := got[tc.entry]
			if !ok {
				t.Fatalf("%s not reported: %+v", tc.entry, r.Classes)
			}
			if v.Dev != tc.dev || v.Whole != tc.whole {
				t.Errorf("dev %q whole %q, want %q %q", v.Dev, v.Whole, tc.dev, tc.whole)
			}
			switch u := v.Use; {
			case tc.use == nil && u != nil:
				t.Errorf("use %+v, want none", u)
			case tc.use == nil:
			case u == nil:
				t.Errorf("no use, want %+v", tc.use)
			case u.Name != tc.use.Name || u.Partitions != tc.use.Partitions || u.Holders != tc.use.Holders ||
				u.Busy != tc.use.Busy || u.Signature != tc.use.Signature:
				t.Errorf("use %+v, want %+v", u, tc.use)
			}
		})
	}
}

// partitionedLoop attaches a 16 MiB loop device with partition scanning,
// holding an MBR with one partition of 4 MiB at 1 MiB, and returns it once
// its partition's device node exists.
func partitionedLoop(t *testing.T) string {
	t.Helper()
	utiltestutil.RequireCommand(t, "losetup", "partx")
	img := filepath.Join(t.TempDir(), "disk.img")
	mbr := make([]byte, 512)
	entry := mbr[446:462]
	entry[4] = 0x83
	binary.LittleEndian.PutUint32(entry[8:], 2048)
	binary.LittleEndian.PutUint32(entry[12:], 8192)
	mbr[510], mbr[511] = 0x55, 0xAA
	if err := os.WriteFile(img, mbr, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(img, 16<<20); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("losetup", "--find", "--show", "--partscan", img).CombinedOutput()
	if err != nil {
		utiltestutil.MissingCapability(t, "cannot attach loop device: %v: %s", err, out)
	}
	dev := strings.TrimSpace(string(out))
	t.Cleanup(func() {
		if out, err := exec.Command("losetup", "--detach", dev).CombinedOutput(); err != nil {
			t.Errorf("failed to detach %s: %v: %s", dev, err, out)
		}
	})
	if _, err := os.Stat(dev + "p1"); err != nil {
		// devtmpfs creates the node with the partition; partx asks again.
		if out, err := exec.Command("partx", "--add", dev).CombinedOutput(); err != nil {
			t.Logf("partx --add %s: %v: %s", dev, err, out)
		}
	}
	if fi, err := os.Stat(dev + "p1"); err != nil || fi.Mode()&os.ModeDevice == 0 {
		utiltestutil.MissingCapability(t, "no partition device %sp1: %v", dev, err)
	}
	return dev
}
