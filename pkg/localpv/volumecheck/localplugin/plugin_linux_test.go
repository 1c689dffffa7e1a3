//go:build linux

package localplugin

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
	v1 "k8s.io/api/core/v1"
	"k8s.io/kubernetes/pkg/volume"

	"github.com/nodeplug/nodeplug/pkg/localpv/identity"
	lpvtestutil "github.com/nodeplug/nodeplug/pkg/localpv/testutil"
	"github.com/nodeplug/nodeplug/pkg/localpv/volumecheck"
	"github.com/nodeplug/nodeplug/pkg/util/testutil"
)

// setUp mounts spec for a new pod through p and returns the pod's volume
// directory and SetUp's error.
func setUp(t *testing.T, p upstreamLocal, spec *volume.Spec, podUID string) (string, error) {
	t.Helper()
	m, err := p.NewMounter(spec, testPod(podUID))
	if err != nil {
		t.Fatal(err)
	}
	return m.GetPath(), m.SetUp(volume.MounterArgs{})
}

// TestSwappedFileSystemsRefused: two ext4 disks published at vol0 and vol1
// come back at each other's paths (as after a reboot with an fstab naming
// /dev/sdX). The tenants' pods are refused with the other PV named and
// nothing is mounted into them; once the mounts are restored the pods
// start on their own disks, with the same PVs. Fails on upstream's plugin,
// which bind mounts whatever is at the path.
func TestSwappedFileSystemsRefused(t *testing.T) {
	testutil.RequireMount(t)
	devA, devB := ext4Disk(t), ext4Disk(t)
	disks := t.TempDir()
	vol0, vol1 := filepath.Join(disks, "vol0"), filepath.Join(disks, "vol1")
	unA, unB := mountAt(t, devA, vol0), mountAt(t, devB, vol1)
	idA, errA := identity.Directory(vol0)
	idB, errB := identity.Directory(vol1)
	if errA != nil || errB != nil || idA == idB {
		t.Fatalf("identities %q (%v) and %q (%v) do not tell the two file systems apart", idA, errA, idB, errB)
	}
	p, _ := wrapped(t, nil)
	pvA := localPV("pv-a", vol0, idA, v1.PersistentVolumeFilesystem)
	pvB := localPV("pv-b", vol1, idB, v1.PersistentVolumeFilesystem)
	for _, tc := range []struct {
		spec *volume.Spec
		uid  string
	}{{pvA, "a1"}, {pvB, "b1"}} {
		dir, err := setUp(t, p, tc.spec, tc.uid)
		if err != nil {
			t.Fatalf("SetUp of %s on its own disk: %v", tc.spec.Name(), err)
		}
		if err := unix.Unmount(dir, 0); err != nil {
			t.Fatal(err)
		}
	}

	unA()
	unB()
	unBA, unAB := mountAt(t, devB, vol0), mountAt(t, devA, vol1)
	for _, tc := range []struct {
		spec  *volume.Spec
		uid   string
		other string
	}{{pvA, "a2", "pv-b"}, {pvB, "b2", "pv-a"}} {
		dir, err := setUp(t, p, tc.spec, tc.uid)
		r := refusal(t, err, volumecheck.ReasonMismatch)
		if r.Owner != tc.other || !strings.Contains(err.Error(), "the disk of PV "+tc.other) {
			t.Errorf("refusal of %s names %q: %v", tc.spec.Name(), r.Owner, err)
		}
		if isMountPoint(t, dir) {
			t.Errorf("%s's pod got a mount at %s", tc.spec.Name(), dir)
		}
	}

	unBA()
	unAB()
	mountAt(t, devA, vol0)
	dir, err := setUp(t, p, pvA, "a2")
	if err != nil {
		t.Fatalf("SetUp after the mounts were restored: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "tenant"), []byte("a"), 0o600); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(vol0, "tenant")); err != nil || string(b) != "a" {
		t.Fatalf("the pod's write is not on PV pv-a's disk: %q, %v", b, err)
	}
}

// blockLinks returns two blank loop devices and, in a new directory, a
// symlink to each (as /dev/disk/by-path links are), with their identities.
func blockLinks(t *testing.T) (devs, links [2]string, ids [2]identity.ID) {
	t.Helper()
	testutil.RequireRoot(t)
	dir := t.TempDir()
	for i := range devs {
		devs[i] = lpvtestutil.LoopDevice(t, 16<<20)
		links[i] = filepath.Join(dir, "disk"+string(rune('0'+i)))
		if err := os.Symlink(devs[i], links[i]); err != nil {
			t.Fatal(err)
		}
		id, _, err := identity.Device("", devs[i])
		if err != nil || id == "" {
			t.Fatalf("identity of %s: %q, %v", devs[i], id, err)
		}
		ids[i] = id
	}
	return devs, links, ids
}

// relink points link at dev.
func relink(t *testing.T, link, dev string) {
	t.Helper()
	if err := os.Remove(link); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(dev, link); err != nil {
		t.Fatal(err)
	}
}

// TestSwappedBlockDevicesRefused: a block-mode PV whose link leads to the
// other PV's device is neither set up nor mapped; restored, it maps.
func TestSwappedBlockDevicesRefused(t *testing.T) {
	devs, links, ids := blockLinks(t)
	p, _ := wrapped(t, nil)
	pvA := localPV("pv-a", links[0], ids[0], v1.PersistentVolumeBlock)
	if _, err := p.NewBlockVolumeMapper(localPV("pv-b", links[1], ids[1], v1.PersistentVolumeBlock), testPod("b1")); err != nil {
		t.Fatal(err)
	}
	relink(t, links[0], devs[1])
	m, err := p.NewBlockVolumeMapper(pvA, testPod("a1"))
	if err != nil {
		t.Fatal(err)
	}
	custom, ok := m.(volume.CustomBlockVolumeMapper)
	if !ok {
		t.Fatalf("mapper %T is not a CustomBlockVolumeMapper: the kubelet would skip SetUpDevice and MapPodDevice", m)
	}
	if _, err := custom.SetUpDevice(); refusal(t, err, volumecheck.ReasonMismatch).Owner != "pv-b" {
		t.Errorf("SetUpDevice refusal does not name pv-b: %v", err)
	}
	if path, err := custom.MapPodDevice(); path != "" || refusal(t, err, volumecheck.ReasonMismatch).Owner != "pv-b" {
		t.Errorf("MapPodDevice returned %q, %v", path, err)
	}
	relink(t, links[0], devs[0])
	if path, err := custom.MapPodDevice(); err != nil || path != links[0] {
		t.Fatalf("MapPodDevice after the link was restored: %q, %v", path, err)
	}
}

// blkidType returns the file system type on dev, or "" for none.
func blkidType(t *testing.T, dev string) string {
	t.Helper()
	out, err := exec.Command("blkid", "-p", "-o", "value", "-s", "TYPE", dev).Output()
	if ee := (*exec.ExitError)(nil); errors.As(err, &ee) && ee.ExitCode() == 2 {
		return ""
	}
	if err != nil {
		t.Fatalf("blkid %s: %v", dev, err)
	}
	return strings.TrimSpace(string(out))
}

// TestMountDeviceProvesTheDiskBeforeFormatting: a file system PV on a
// block device whose link leads to another blank device is refused before
// anything is formatted or mounted; restored, it is formatted and mounted,
// and SetUp then also checks that the device mount path holds that
// device's file system.
func TestMountDeviceProvesTheDiskBeforeFormatting(t *testing.T) {
	testutil.RequireMount(t)
	testutil.RequireCommand(t, "blkid", "mkfs.ext4")
	devs, links, ids := blockLinks(t)
	p, _ := wrapped(t, nil)
	pvA := localPV("pv-a", links[0], ids[0], v1.PersistentVolumeFilesystem)
	dm, err := p.NewDeviceMounter()
	if err != nil {
		t.Fatal(err)
	}
	target, err := dm.GetDeviceMountPath(pvA)
	if err != nil {
		t.Fatal(err)
	}
	relink(t, links[0], devs[1])
	refusal(t, dm.MountDevice(pvA, links[0], target, volume.DeviceMounterArgs{}), volumecheck.ReasonMismatch)
	if typ := blkidType(t, devs[1]); typ != "" || isMountPoint(t, target) {
		t.Fatalf("refused MountDevice left %s with file system %q, mounted at %s: %v", devs[1], typ, target, isMountPoint(t, target))
	}

	relink(t, links[0], devs[0])
	if err := dm.MountDevice(pvA, links[0], target, volume.DeviceMounterArgs{}); err != nil {
		t.Fatal(err)
	}
	if _, err := setUp(t, p, pvA, "a1"); err != nil {
		t.Fatalf("SetUp over the device's own mount: %v", err)
	}

	if err := unix.Unmount(target, unix.MNT_DETACH); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mkfs.ext4", "-q", "-F", devs[1]).CombinedOutput(); err != nil {
		t.Fatalf("mkfs.ext4: %v: %s", err, out)
	}
	mountAt(t, devs[1], target)
	dir, err := setUp(t, p, pvA, "a2")
	if r := refusal(t, err, volumecheck.ReasonNotMounted); r.MountPath != target || isMountPoint(t, dir) {
		t.Fatalf("refusal at %q (want %s), pod mounted: %v", r.MountPath, target, isMountPoint(t, dir))
	}
}
