//go:build linux

package localplugin

import (
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
	v1 "k8s.io/api/core/v1"

	"github.com/nodeplug/nodeplug/pkg/localpv/identity"
	"github.com/nodeplug/nodeplug/pkg/localpv/volumecheck"
	"github.com/nodeplug/nodeplug/pkg/util/testutil"
)

// TestSetUpAgreesWithUnprivilegedDiscovery: on ext4 before Linux 6.0
// without a udev record, discovery (unprivileged, no superblock) records a
// directory's file handle with its device's identity, while the kubelet
// (root) could read the file system's UUID from the superblock. The
// kubelet computes the recorded form, so the PV's own disk mounts; the
// other disk at its path is still refused. Fails where the kubelet read
// fs and refused the PV's own disk.
func TestSetUpAgreesWithUnprivilegedDiscovery(t *testing.T) {
	testutil.RequireMount(t)
	devA, devB := ext4Disk(t), ext4Disk(t)
	disks := t.TempDir()
	vol0 := filepath.Join(disks, "vol0")
	unA := mountAt(t, devA, vol0)
	restore := identity.SetUnavailable(identity.SourceGenericIoctl | identity.SourceFSIoctl |
		identity.SourceSuperblock | identity.SourceUdev)
	recorded, err := identity.Directory(vol0)
	restore()
	if err != nil || recorded.Kind() != identity.KindFileHandleOnDisk {
		t.Fatalf("discovery's identity %q (%v), want fhdisk", recorded, err)
	}
	defer identity.SetUnavailable(identity.SourceGenericIoctl | identity.SourceFSIoctl)()
	if own, err := identity.Directory(vol0); err != nil || own.Kind() != identity.KindFS {
		t.Fatalf("the kubelet's own identity %q (%v), want fs from the superblock", own, err)
	}
	p, _ := wrapped(t, nil)
	pv := localPV("pv-a", vol0, recorded, v1.PersistentVolumeFilesystem)
	dir, err := setUp(t, p, pv, "a1")
	if err != nil {
		t.Fatalf("SetUp of the PV's own disk: %v", err)
	}
	if err := unix.Unmount(dir, 0); err != nil {
		t.Fatal(err)
	}
	unA()
	mountAt(t, devB, vol0)
	dir, err = setUp(t, p, pv, "a2")
	refusal(t, err, volumecheck.ReasonMismatch)
	if isMountPoint(t, dir) {
		t.Errorf("the pod got a mount of another disk at %s", dir)
	}
}
