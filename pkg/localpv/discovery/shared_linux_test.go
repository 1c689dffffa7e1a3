//go:build linux

package discovery

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
	"k8s.io/klog/v2/ktesting"

	"github.com/nodeplug/nodeplug/pkg/localpv/identity"
	"github.com/nodeplug/nodeplug/pkg/localpv/testutil"
	utiltestutil "github.com/nodeplug/nodeplug/pkg/util/testutil"
)

// TestDiscoverClonedFileSystems: two ext4 file systems with one UUID (a
// cloned disk) mounted in a class report one identity; discovery gives each
// its device's name so that the master sees two devices and publishes
// neither. A bind mount of one of them is the same file system.
func TestDiscoverClonedFileSystems(t *testing.T) {
	testutil.RequireRoot(t)
	utiltestutil.RequireMount(t)
	utiltestutil.RequireCommand(t, "mkfs.ext4")
	dir := t.TempDir()
	devs := mountExt4s(t, dir, "0b6c3f9e-1d2a-4c5b-9e8f-7a6b5c4d3e21", "vol0", "vol1")
	bind := filepath.Join(dir, "vol2")
	if err := os.Mkdir(bind, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount(filepath.Join(dir, "vol0"), bind, "", unix.MS_BIND, ""); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = unix.Unmount(bind, unix.MNT_DETACH) })
	_, ctx := ktesting.NewTestContext(t)
	r, err := NewDiscoverer(&Scanner{}, SelfMountInfo).Discover(ctx, "node-1",
		[]ClassSpec{{Name: "fs", MountDir: dir, VolumeMode: "Filesystem", NamePattern: "vol*"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, v := range r.Classes[0].Volumes {
		got[v.Name] = v.Dev
		if v.ID != r.Classes[0].Volumes[0].ID || v.ID == "" {
			t.Errorf("volume %s: identity %q, want the clones' one", v.Name, v.ID)
		}
	}
	want := map[string]string{"vol0": devs[0], "vol1": devs[1], "vol2": devs[0]}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("volume %s: device %q, want %q (all %v)", k, got[k], w, got)
		}
	}
}

// mountExt4s makes an ext4 file system with UUID u (or "clear") on a loop
// device for each name and mounts it at dir/name; it returns the devices'
// kernel names.
func mountExt4s(t *testing.T, dir, u string, names ...string) []string {
	t.Helper()
	var devs []string
	for _, name := range names {
		dev := testutil.LoopDevice(t, 16<<20)
		if out, err := exec.Command("mkfs.ext4", "-q", "-U", u, dev).CombinedOutput(); err != nil {
			t.Fatalf("mkfs.ext4: %v: %s", err, out)
		}
		mnt := filepath.Join(dir, name)
		if err := os.Mkdir(mnt, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := unix.Mount(dev, mnt, "ext4", 0, ""); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = unix.Unmount(mnt, unix.MNT_DETACH) })
		devs = append(devs, filepath.Base(dev))
	}
	return devs
}

// TestDiscoverUUIDLessFileSystemsBeforeLinux69 is issue 35's reproduction:
// two ext4 file systems without a UUID at vol0 and vol1, read as a kernel
// without FS_IOC_GETFSUUID reads them. Each gets its own identity (the root
// handle with its device's), so the master publishes both. Before, both
// were fh with the one handle of every ext4 root, and one was published.
func TestDiscoverUUIDLessFileSystemsBeforeLinux69(t *testing.T) {
	testutil.RequireRoot(t)
	utiltestutil.RequireMount(t)
	utiltestutil.RequireCommand(t, "mkfs.ext4")
	defer identity.SetUnavailable(identity.SourceGenericIoctl)()
	dir := t.TempDir()
	mountExt4s(t, dir, "clear", "vol0", "vol1")
	_, ctx := ktesting.NewTestContext(t)
	r, err := NewDiscoverer(&Scanner{}, SelfMountInfo).Discover(ctx, "node-1",
		[]ClassSpec{{Name: "fs", MountDir: dir, VolumeMode: "Filesystem", NamePattern: "vol*"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	vols := r.Classes[0].Volumes
	if len(vols) != 2 || vols[0].ID == "" || identity.Compare(vols[0].ID, vols[1].ID) != identity.Different || vols[0].Dev == vols[1].Dev {
		t.Fatalf("volumes %+v: want two with different identities", vols)
	}
	if k := vols[0].ID.Kind(); k != identity.KindFileHandleOnDisk {
		t.Errorf("identity %q, want kind %s", vols[0].ID, identity.KindFileHandleOnDisk)
	}
}
