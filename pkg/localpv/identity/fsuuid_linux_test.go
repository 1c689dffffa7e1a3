//go:build linux

package identity

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/nodeplug/nodeplug/pkg/util/testutil"
)

// loopFS is a file system made on a loop device and mounted for a test.
type loopFS struct {
	img, dev, dir string
}

// mountLoopFS makes a file system of type fsType (mkfs arguments args) on
// a sparse image on a loop device and mounts it; all is undone in Cleanup.
// xfs is mounted with nouuid, so that two with one UUID mount.
func mountLoopFS(t *testing.T, fsType string, args ...string) loopFS {
	t.Helper()
	testutil.RequireMount(t)
	testutil.RequireCommand(t, "losetup", "mkfs."+fsType)
	tmp := t.TempDir()
	l := loopFS{img: filepath.Join(tmp, "disk.img"), dir: filepath.Join(tmp, "mnt")}
	if err := os.Mkdir(l.dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(l.img, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(l.img, 320<<20); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mkfs."+fsType, append(args, l.img)...).CombinedOutput(); err != nil {
		t.Fatalf("mkfs.%s %v: %v: %s", fsType, args, err, out)
	}
	l.dev = mountImage(t, fsType, l.img, l.dir)
	return l
}

// mountImage attaches the image img to a loop device and mounts its file
// system of type fsType at dir; both are undone in Cleanup. It returns the
// loop device.
func mountImage(t *testing.T, fsType, img, dir string) string {
	t.Helper()
	out, err := exec.Command("losetup", "-f", "--show", img).CombinedOutput()
	if err != nil {
		testutil.MissingCapability(t, "losetup: %v: %s", err, out)
	}
	dev := strings.TrimSpace(string(out))
	t.Cleanup(func() { _ = exec.Command("losetup", "-d", dev).Run() })
	data := ""
	if fsType == "xfs" {
		data = "nouuid"
	}
	if err := unix.Mount(dev, dir, fsType, 0, data); err != nil {
		t.Fatalf("mount %s %s: %v", fsType, dev, err)
	}
	t.Cleanup(func() { _ = unix.Unmount(dir, unix.MNT_DETACH) })
	return dev
}

func handleOfPath(t *testing.T, p string) unix.FileHandle {
	t.Helper()
	h, _, err := unix.NameToHandleAt(unix.AT_FDCWD, p, 0)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// sourceCases force the UUID's sources unavailable one after another, as
// kernels before 6.9 (no generic ioctl) and nodes without access to the
// device or udev see them. withUUID says whether a UUID is still found.
var sourceCases = []struct {
	name     string
	off      Source
	withUUID bool
}{
	{"every source", 0, true},
	{"no generic ioctl (before 6.9)", SourceGenericIoctl, true},
	{"file system's ioctl only", SourceGenericIoctl | SourceSuperblock | SourceUdev, true},
	{"superblock only", SourceGenericIoctl | SourceFSIoctl | SourceUdev, true},
	{"no source", SourceGenericIoctl | SourceFSIoctl | SourceSuperblock | SourceUdev, false},
}

// TestDirectoryUUIDSources reads the identity of mount roots of real ext4,
// xfs and btrfs file systems with each source of the UUID forced
// unavailable: where one is left the identity is fs with the file system's
// UUID, else the file handle with the loop device's identity.
func TestDirectoryUUIDSources(t *testing.T) {
	const u = "6a0f1c2e-3b4d-4e5f-8a9b-0c1d2e3f4a5b"
	for _, fs := range []struct {
		fsType string
		args   []string
	}{
		{"ext4", []string{"-q", "-U", u}},
		{"xfs", []string{"-q", "-m", "uuid=" + u}},
		{"btrfs", []string{"-q", "-U", u}},
	} {
		t.Run(fs.fsType, func(t *testing.T) {
			l := mountLoopFS(t, fs.fsType, fs.args...)
			h := handleOfPath(t, l.dir)
			for _, tc := range sourceCases {
				t.Run(tc.name, func(t *testing.T) {
					defer SetUnavailable(tc.off)()
					got, err := Directory(l.dir)
					if err != nil {
						t.Fatal(err)
					}
					want := FS(u, h.Type(), h.Bytes())
					if !tc.withUUID {
						want = FileHandleOnDisk(h.Type(), h.Bytes(), Loop(l.img, 0, 0))
					}
					if got != want {
						t.Errorf("Directory = %q, want %q", got, want)
					}
					if err := got.Valid(); err != nil {
						t.Error(err)
					}
				})
			}
		})
	}
}

// TestDirectoryUdevUUID finds the UUID in udev's database when nothing else
// gives it.
func TestDirectoryUdevUUID(t *testing.T) {
	const u = "0b6c3f9e-1d2a-4c5b-9e8f-7a6b5c4d3e21"
	l := mountLoopFS(t, "ext4", "-q", "-U", u)
	var st unix.Stat_t
	if err := unix.Stat(l.dir, &st); err != nil {
		t.Fatal(err)
	}
	db := t.TempDir()
	name := fmt.Sprintf("b%d:%d", unix.Major(st.Dev), unix.Minor(st.Dev))
	if err := os.WriteFile(filepath.Join(db, name), []byte("S:disk/by-uuid/x\nE:ID_FS_TYPE=ext4\nE:ID_FS_UUID="+strings.ToUpper(u)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	old := udevDataDirs
	udevDataDirs = []string{filepath.Join(db, "missing"), db}
	t.Cleanup(func() { udevDataDirs = old })
	defer SetUnavailable(SourceGenericIoctl | SourceFSIoctl | SourceSuperblock)()
	h := handleOfPath(t, l.dir)
	if got, err := Directory(l.dir); err != nil || got != FS(u, h.Type(), h.Bytes()) {
		t.Errorf("Directory = %q, %v; want %q", got, err, FS(u, h.Type(), h.Bytes()))
	}
}

// TestDirectoryWithoutUUID: the roots of two ext4 (or xfs) file systems
// that carry no UUID have one file handle, yet different identities, each
// as strong as its device's (a loop device's is weak), whatever the kernel
// offers. Before, both were fh with the same handle.
func TestDirectoryWithoutUUID(t *testing.T) {
	for _, fs := range []struct {
		fsType string
		args   []string
	}{
		{"ext4", []string{"-q", "-U", "clear"}},
		{"xfs", []string{"-q", "-m", "uuid=00000000-0000-0000-0000-000000000000"}},
	} {
		t.Run(fs.fsType, func(t *testing.T) {
			a, b := mountLoopFS(t, fs.fsType, fs.args...), mountLoopFS(t, fs.fsType, fs.args...)
			for _, tc := range sourceCases {
				t.Run(tc.name, func(t *testing.T) {
					defer SetUnavailable(tc.off)()
					idA, errA := Directory(a.dir)
					idB, errB := Directory(b.dir)
					if errA != nil || errB != nil {
						t.Fatal(errA, errB)
					}
					h := handleOfPath(t, a.dir)
					if want := FileHandleOnDisk(h.Type(), h.Bytes(), Loop(a.img, 0, 0)); idA != want {
						t.Errorf("Directory = %q, want %q", idA, want)
					}
					if Compare(idA, idB) != Different || idA.Strong() {
						t.Errorf("two UUID-less roots: %q and %q compare %v (strong %v)", idA, idB, Compare(idA, idB), idA.Strong())
					}
				})
			}
		})
	}
}

// TestDirectoryAnonymous: directories on two tmpfs mounts never share an
// identity, even where the kernel gives tmpfs no UUID.
func TestDirectoryAnonymous(t *testing.T) {
	testutil.RequireMount(t)
	defer SetUnavailable(SourceGenericIoctl | SourceFSIoctl | SourceSuperblock | SourceUdev)()
	var ids []ID
	for range 2 {
		dir := t.TempDir()
		if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "size=1m"); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = unix.Unmount(dir, unix.MNT_DETACH) })
		id, err := Directory(dir)
		if err != nil {
			t.Fatal(err)
		}
		if id.Kind() != KindLocalFileHandle || id.Strong() {
			t.Errorf("tmpfs root identity %q, want a weak %s", id, KindLocalFileHandle)
		}
		ids = append(ids, id)
	}
	if Compare(ids[0], ids[1]) != Different {
		t.Errorf("two tmpfs roots compare %v: %q, %q", Compare(ids[0], ids[1]), ids[0], ids[1])
	}
}

// TestDirectoryFileFollowsTheDescriptor: the identity read through an open
// descriptor is that of the directory opened, not of what its path leads to
// later.
func TestDirectoryFileFollowsTheDescriptor(t *testing.T) {
	a := mountLoopFS(t, "ext4", "-q", "-U", "clear")
	f, err := os.Open(a.dir)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	before, err := DirectoryFile(f)
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.Unmount(a.dir, unix.MNT_DETACH); err != nil {
		t.Fatal(err)
	}
	if after, err := DirectoryFile(f); err != nil || after != before {
		t.Errorf("DirectoryFile after the path changed = %q, %v; want %q", after, err, before)
	}
	if now, err := Directory(a.dir); err != nil || Compare(before, now) == Same {
		t.Errorf("the path now leads to %q (%v), the same as the descriptor's %q", now, err, before)
	}
	dev, err := os.Open(a.dev)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = dev.Close() }()
	if id, name, err := DeviceFile("", dev); err != nil || id != Loop(a.img, 0, 0) || name != filepath.Base(a.dev) {
		t.Errorf("DeviceFile = %q, %q, %v; want %q", id, name, err, Loop(a.img, 0, 0))
	}
	if _, _, err := DeviceFile("", f); err == nil {
		t.Error("a directory has a device identity")
	}
}
