//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/nodeplug/nodeplug/test/e2e/framework"
)

const selectedClass = "local-selected"

// TestLocalPVDiskSelector publishes loop devices through a class that
// chooses disks by their properties. Loop devices have no serial, so the
// test plays udev: it gives each a WWN-named link in the class's link
// directory, as udev does in /dev/disk/by-id. A blank disk becomes a PV at
// its link with property labels; a disk with a file system signature gets
// none and an Event; the node's inventory is in its NodeDiskState status;
// the disk keeps its PV when it comes back under another loop device; and a
// claim selecting by the property labels binds and a pod writes the disk.
func TestLocalPVDiskSelector(t *testing.T) {
	c := framework.Connect(t)
	ctx := t.Context()
	n := c.Node
	disks := newLPVDisksOn(t, n)
	blank, blankImg := addLinkedLoop(t, disks, "wwn-0x50000e2e00000001", false)
	formatted, _ := addLinkedLoop(t, disks, "wwn-0x50000e2e00000002", true)
	rotational := readSys(t, filepath.Join("/sys/block", filepath.Base(blank), "queue", "rotational")) == "1"
	applyStorageClass(ctx, t, c, selectedClass)
	deployLPVWith(ctx, t, c, disks, map[string]string{
		"labelsForPV": "{team: storage}",
		"storageClassMap": fmt.Sprintf(`%s:
  hostDir: %s
  mountDir: /mnt/fast-disks
%s:
  hostDir: %s
  mountDir: /mnt/block-disks
  volumeMode: Block
  blockCleanerCommand: ["/scripts/quick_reset.sh"]
  diskSelector: {rotational: %t, maxSize: 256Mi, loopDevices: true}
`, fastClass, disks.fast, selectedClass, disks.block, rotational)})

	blankLink := filepath.Join(disks.block, "wwn-0x50000e2e00000001")
	pv := waitForPV(ctx, t, c, blankLink, "", corev1.VolumeAvailable)
	want := map[string]string{"disk.localpv.nodeplug.io/rotational": fmt.Sprint(rotational), "team": "storage"}
	for k, v := range want {
		if pv.Labels[k] != v {
			t.Errorf("PV %s label %s = %q, want %q (labels %v)", pv.Name, k, pv.Labels[k], v, pv.Labels)
		}
	}
	if *pv.Spec.VolumeMode != corev1.PersistentVolumeBlock || pv.Spec.StorageClassName != selectedClass {
		t.Errorf("PV %s: mode %s class %s", pv.Name, *pv.Spec.VolumeMode, pv.Spec.StorageClassName)
	}
	c.RequireEvent(ctx, t, framework.EventQuery{Reason: "DiskSkipped", MessageContains: "wwn-0x50000e2e00000002"}, 120*time.Second)
	if p := findPV(ctx, t, c, filepath.Join(disks.block, "wwn-0x50000e2e00000002")); p != nil {
		t.Errorf("the disk with a file system (%s) got PV %s", formatted, p.Name)
	}
	waitForInventory(ctx, t, c, n.Name, filepath.Base(blank))

	t.Run("the disk keeps its PV under another loop device", func(t *testing.T) {
		again := relinkLoop(t, disks, blankImg, blank, blankLink)
		// The watcher's view holds link names, not targets: a new disk
		// makes it ask for the discovery that sees the move, as a
		// watcher's start does after a reboot.
		addLinkedLoop(t, disks, "wwn-0x50000e2e00000003", false)
		waitForPV(ctx, t, c, filepath.Join(disks.block, "wwn-0x50000e2e00000003"), "", corev1.VolumeAvailable)
		waitForInventory(ctx, t, c, n.Name, filepath.Base(again))
		now := findPV(ctx, t, c, blankLink)
		if now == nil || now.UID != pv.UID || now.Annotations["localpv.nodeplug.io/volume-missing-since"] != "" {
			t.Fatalf("PV of %s changed after the disk moved from %s to %s: before %s, now %+v", blankLink, blank, again, pv.UID, now)
		}
	})

	t.Run("a claim selects a disk by its labels", func(t *testing.T) {
		name := "e2e-lpv-selected"
		pvc := &corev1.PersistentVolumeClaim{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: corev1.PersistentVolumeClaimSpec{
				AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				StorageClassName: ptr.To(selectedClass),
				VolumeMode:       ptr.To(corev1.PersistentVolumeBlock),
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{
					"disk.localpv.nodeplug.io/rotational": fmt.Sprint(rotational), "team": "storage"}},
				Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{
					corev1.ResourceStorage: resource.MustParse("32Mi")}},
			},
		}
		if _, err := c.Client.CoreV1().PersistentVolumeClaims("default").Create(ctx, pvc, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		pod := framework.BusyboxPod(name, "echo selected | dd of=/dev/xvda conv=fsync && sleep 3600")
		pod.Spec.Containers[0].VolumeDevices = []corev1.VolumeDevice{{Name: "data", DevicePath: "/dev/xvda"}}
		pod.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: name}}}}
		// No node: the scheduler binds the claim (WaitForFirstConsumer) and
		// places the pod on the PV's node.
		c.CreatePodOn(ctx, t, pod, "")
		c.WaitForPod(ctx, t, name, 120*time.Second, corev1.PodRunning)
		bound, err := c.Client.CoreV1().PersistentVolumeClaims("default").Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		got, err := c.Client.CoreV1().PersistentVolumes().Get(ctx, bound.Spec.VolumeName, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got.Spec.StorageClassName != selectedClass || !strings.HasPrefix(got.Spec.Local.Path, disks.block+"/wwn-") {
			t.Errorf("claim bound to PV %s at %s", got.Name, got.Spec.Local.Path)
		}
		p, err := c.Client.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if p.Spec.NodeName != n.Name {
			t.Errorf("pod on %s, want the PV's node %s", p.Spec.NodeName, n.Name)
		}
		c.DeletePod(t, name)
		deleteClaim(ctx, t, c, name)
	})
}

// addLinkedLoop attaches a new 64 MiB image, with an ext4 magic when
// formatted, and links link in the node's block directory to it. It
// returns the device and the image.
func addLinkedLoop(t *testing.T, d *lpvDisks, link string, formatted bool) (string, string) {
	t.Helper()
	img := d.host(filepath.Join(d.base, "img", link+".img"))
	head := make([]byte, 4096)
	if formatted {
		head[1080], head[1081] = 0x53, 0xef
	}
	if err := os.WriteFile(img, head, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(img, 64<<20); err != nil {
		t.Fatal(err)
	}
	dev := attachLoop(t, d, img)
	if err := os.Symlink(dev, d.host(filepath.Join(d.block, link))); err != nil {
		t.Fatal(err)
	}
	return dev, img
}

func attachLoop(t *testing.T, d *lpvDisks, img string) string {
	t.Helper()
	dev := framework.AttachLoop(t, img)
	d.loops = append(d.loops, dev)
	return dev
}

// relinkLoop attaches img to a second loop device, points link at it and
// detaches the first, as a reboot that renumbers devices would leave it.
func relinkLoop(t *testing.T, d *lpvDisks, img, old, link string) string {
	t.Helper()
	dev := attachLoop(t, d, img)
	tmp := d.host(link + ".new")
	if err := os.Symlink(dev, tmp); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, d.host(link)); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("losetup", "-d", old).CombinedOutput(); err != nil {
		t.Fatalf("losetup -d %s: %v: %s", old, err, out)
	}
	return dev
}

func readSys(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

func applyStorageClass(ctx context.Context, t *testing.T, c *framework.Cluster, name string) {
	t.Helper()
	file := filepath.Join(t.TempDir(), "sc.yaml")
	doc := "apiVersion: storage.k8s.io/v1\nkind: StorageClass\nmetadata:\n  name: " + name +
		"\nprovisioner: kubernetes.io/no-provisioner\nvolumeBindingMode: WaitForFirstConsumer\nreclaimPolicy: Delete\n"
	if err := os.WriteFile(file, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Kubectl(ctx, "apply", "-f", file); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = c.Kubectl(context.Background(), "delete", "storageclass", name, "--ignore-not-found") })
}

// waitForInventory waits until the node's NodeDiskState status lists the
// kernel device dev with its size.
func waitForInventory(ctx context.Context, t *testing.T, c *framework.Cluster, node, dev string) {
	t.Helper()
	var raw string
	err := framework.Poll(t.Context(), 120*time.Second, func(context.Context) bool {
		raw, _ = c.Kubectl(ctx, "get", "nodediskstates.localpv.nodeplug.io", node, "-o", "json")
		var obj struct {
			Status struct {
				DisksTotal int `json:"disksTotal"`
				Disks      []struct {
					Name      string `json:"name"`
					SizeBytes int64  `json:"sizeBytes"`
				} `json:"disks"`
			} `json:"status"`
		}
		if json.Unmarshal([]byte(raw), &obj) != nil {
			return false
		}
		for _, d := range obj.Status.Disks {
			if d.Name == dev && d.SizeBytes == 64<<20 {
				return true
			}
		}
		return false
	})
	if err != nil {
		t.Fatalf("inventory of %s does not list %s: %v\n%s", node, dev, err, raw)
	}
}
