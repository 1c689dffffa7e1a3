//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/nodeplug/nodeplug/test/e2e/framework"
)

const anySigClass = "local-selected-any"

// TestLocalPVDiskIdentity acts as users do with disks that must never be
// published twice or wiped by mistake: a disk used raw under a plain class
// and linked again for a selector class, a disk behind a hand-made
// (upstream-style) PV, an md 1.0 RAID member (its metadata at the end), a
// whole-disk file system that is mounted, and a link moved to another disk
// while its PV waits for its wipe.
func TestLocalPVDiskIdentity(t *testing.T) {
	c := framework.Connect(t)
	ctx := t.Context()
	n := c.Node
	disks := newLPVDisksOn(t, n)
	selDir, anyDir := filepath.Join(disks.base, "sel"), filepath.Join(disks.base, "any")
	for _, dir := range []string{selDir, anyDir} {
		if err := os.MkdirAll(disks.host(dir), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	noData := func(*os.File) {}
	// One loop device, linked in the plain Block class and for the selector.
	blank := addLoopImage(t, disks, "blank", noData)
	linkTo(t, disks, blank, filepath.Join(disks.block, "raw0"))
	linkTo(t, disks, blank, filepath.Join(selDir, "wwn-0x50000e2e00000011"))
	upstreamDev := addLoopImage(t, disks, "upstream", noData)
	linkTo(t, disks, upstreamDev, filepath.Join(selDir, "wwn-0x50000e2e00000012"))
	mdMember := addLoopImage(t, disks, "md-member", writeMD10Superblock)
	linkTo(t, disks, mdMember, filepath.Join(selDir, "wwn-0x50000e2e00000013"))
	mounted := addLoopImage(t, disks, "mounted", noData)
	mkfsExt4(t, mounted)
	linkTo(t, disks, mounted, filepath.Join(anyDir, "wwn-0x50000e2e00000014"))
	mnt := filepath.Join(disks.base, "mnt")
	n.Run(ctx, t, "mkdir", "-p", mnt)
	n.Run(ctx, t, "mount", mounted, mnt)
	t.Cleanup(func() { _ = n.Command(context.Background(), "umount", mnt).Run() })
	control := addLoopImage(t, disks, "control", noData)
	linkTo(t, disks, control, filepath.Join(anyDir, "wwn-0x50000e2e00000016"))

	node, err := c.Client.CoreV1().Nodes().Get(ctx, n.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	upstreamPV := handMadeLocalPV("e2e-upstream-style", upstreamDev, node.Labels[corev1.LabelHostname])
	if _, err := c.Client.CoreV1().PersistentVolumes().Create(ctx, upstreamPV, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = c.Client.CoreV1().PersistentVolumes().Delete(context.Background(), upstreamPV.Name, metav1.DeleteOptions{})
	})

	applyStorageClass(ctx, t, c, selectedClass)
	applyStorageClass(ctx, t, c, anySigClass)
	deployLPVWith(ctx, t, c, disks, map[string]string{"storageClassMap": fmt.Sprintf(`%s:
  hostDir: %s
  mountDir: /mnt/block-disks
  volumeMode: Block
  blockCleanerCommand: ["/scripts/quick_reset.sh"]
  namePattern: "raw*"
%s:
  hostDir: %s
  mountDir: /mnt/selected
  volumeMode: Block
  blockCleanerCommand: ["/scripts/quick_reset.sh"]
  diskSelector: {loopDevices: true, maxSize: 256Mi}
%s:
  hostDir: %s
  mountDir: /mnt/any
  volumeMode: Block
  blockCleanerCommand: ["/scripts/quick_reset.sh"]
  diskSelector: {loopDevices: true, maxSize: 256Mi, acceptSignatures: true}
`, blockClass, disks.block, selectedClass, selDir, anySigClass, anyDir)})

	// The control disk of the acceptSignatures class gets its PV: every
	// report below has been acted on once it exists.
	waitForPV(ctx, t, c, filepath.Join(anyDir, "wwn-0x50000e2e00000016"), "", corev1.VolumeAvailable)
	raw := waitForPV(ctx, t, c, filepath.Join(disks.block, "raw0"), "", corev1.VolumeAvailable)
	for _, tc := range []struct{ name, link string }{
		{"a disk used under a plain class is not offered again by a selector class", "wwn-0x50000e2e00000011"},
		{"a disk behind an upstream-style PV is not published", "wwn-0x50000e2e00000012"},
		{"an md 1.0 member (metadata at the end) is not published", "wwn-0x50000e2e00000013"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if pv := findPV(ctx, t, c, filepath.Join(selDir, tc.link)); pv != nil {
				t.Errorf("PV %s published for %s (the raw PV is %s)", pv.Name, tc.link, raw.Name)
			}
		})
	}
	t.Run("a mounted whole-disk file system is not published, even with acceptSignatures", func(t *testing.T) {
		if pv := findPV(ctx, t, c, filepath.Join(anyDir, "wwn-0x50000e2e00000014")); pv != nil {
			t.Errorf("PV %s published for the mounted disk %s", pv.Name, mounted)
		}
	})
	t.Run("a link moved to another disk while its PV is released wipes nothing", func(t *testing.T) {
		linkMovedWhileReleased(ctx, t, c, disks, raw)
	})
}

// linkMovedWhileReleased writes a tenant's bytes through raw's PV, moves
// the link to another disk, releases the claim, and checks that neither
// disk was wiped and that the new disk gets a PV of its own.
func linkMovedWhileReleased(ctx context.Context, t *testing.T, c *framework.Cluster, d *lpvDisks, raw *corev1.PersistentVolume) {
	name := "e2e-lpv-moved"
	pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			StorageClassName: ptr.To(blockClass), VolumeMode: ptr.To(corev1.PersistentVolumeBlock), VolumeName: raw.Name,
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Mi")}}}}
	if _, err := c.Client.CoreV1().PersistentVolumeClaims("default").Create(ctx, pvc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pod := framework.BusyboxPod(name, "echo tenant-data | dd of=/dev/xvda conv=fsync")
	pod.Spec.Containers[0].VolumeDevices = []corev1.VolumeDevice{{Name: "data", DevicePath: "/dev/xvda"}}
	pod.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
		PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: name}}}}
	c.CreatePodOn(ctx, t, pod, "")
	c.WaitForPod(ctx, t, name, 120*time.Second, corev1.PodSucceeded)
	c.DeletePod(t, name)

	tenantDev := resolveLink(t, d, raw.Spec.Local.Path)
	other := addLoopImage(t, d, "other", func(f *os.File) { _, _ = f.WriteAt([]byte("other-disk"), 0) })
	linkTo(t, d, other, raw.Spec.Local.Path)
	deleteClaim(ctx, t, c, name)

	fresh := waitForPV(ctx, t, c, raw.Spec.Local.Path, raw.UID, corev1.VolumeAvailable)
	if fresh.Annotations["localpv.nodeplug.io/disk-id"] == raw.Annotations["localpv.nodeplug.io/disk-id"] {
		t.Errorf("the new PV %s records the old disk %s", fresh.Name, raw.Annotations["localpv.nodeplug.io/disk-id"])
	}
	if pv, err := c.Client.CoreV1().PersistentVolumes().Get(ctx, raw.Name, metav1.GetOptions{}); err == nil && pv.UID == raw.UID {
		t.Errorf("the released PV %s of the moved link still exists", raw.Name)
	}
	if got := readDevice(t, other, 10); got != "other-disk" {
		t.Errorf("the disk the link moved to was written: first bytes %q", got)
	}
	if got := readDevice(t, tenantDev, 11); got != "tenant-data" {
		t.Errorf("the tenant's disk changed after its link moved: first bytes %q", got)
	}
	t.Logf("link %s moved from %s to %s: PV %s dropped unwiped, PV %s published for the new disk", raw.Spec.Local.Path,
		tenantDev, other, raw.Name, fresh.Name)
}

// handMadeLocalPV is a local PV as an admin or the upstream provisioner
// writes it: no nodeplug label, the device path itself.
func handMadeLocalPV(name, path, hostname string) *corev1.PersistentVolume {
	return &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("64Mi")},
			AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
			StorageClassName:              "e2e-upstream-style",
			VolumeMode:                    ptr.To(corev1.PersistentVolumeBlock),
			PersistentVolumeSource:        corev1.PersistentVolumeSource{Local: &corev1.LocalVolumeSource{Path: path}},
			NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
				MatchExpressions: []corev1.NodeSelectorRequirement{{Key: corev1.LabelHostname, Operator: corev1.NodeSelectorOpIn,
					Values: []string{hostname}}}}}}},
		}}
}

// addLoopImage attaches a new 64 MiB image that write fills, and returns
// the loop device.
func addLoopImage(t *testing.T, d *lpvDisks, name string, write func(*os.File)) string {
	t.Helper()
	img := d.host(filepath.Join(d.base, "img", name+".img"))
	f, err := os.Create(img)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(64 << 20); err != nil {
		t.Fatal(err)
	}
	write(f)
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return attachLoop(t, d, img)
}

// writeMD10Superblock writes an md metadata 1.0 superblock's magic and
// version where md puts it: 8 KiB before the end, 4 KiB aligned.
func writeMD10Superblock(f *os.File) {
	sb := binary.LittleEndian.AppendUint32(nil, 0xa92b4efc)
	sb = binary.LittleEndian.AppendUint32(sb, 1)
	_, _ = f.WriteAt(sb, (64<<20-8<<10)&^(4<<10-1))
}

// linkTo points the node's link at dev, replacing it atomically.
func linkTo(t *testing.T, d *lpvDisks, dev, link string) {
	t.Helper()
	tmp := d.host(link + ".new")
	_ = os.Remove(tmp)
	if err := os.Symlink(dev, tmp); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, d.host(link)); err != nil {
		t.Fatal(err)
	}
}

func resolveLink(t *testing.T, d *lpvDisks, link string) string {
	t.Helper()
	dev, err := os.Readlink(d.host(link))
	if err != nil {
		t.Fatal(err)
	}
	return dev
}

func mkfsExt4(t *testing.T, dev string) {
	t.Helper()
	if out, err := exec.Command("mkfs.ext4", "-q", "-F", dev).CombinedOutput(); err != nil {
		t.Fatalf("mkfs.ext4 %s: %v: %s", dev, err, out)
	}
}

func readDevice(t *testing.T, dev string, n int) string {
	t.Helper()
	f, err := os.Open(dev)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := make([]byte, n)
	if _, err := f.ReadAt(b, 0); err != nil {
		t.Fatal(err)
	}
	return string(bytes.TrimRight(b, "\x00"))
}
