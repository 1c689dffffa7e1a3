package controller

import (
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeplug/localpv-api/localpv/v1alpha1"

	"github.com/nodeplug/nodeplug/pkg/localpv/config"
	"github.com/nodeplug/nodeplug/pkg/localpv/controller/publishing"
	"github.com/nodeplug/nodeplug/pkg/localpv/jobs"
	"github.com/nodeplug/nodeplug/pkg/localpv/metrics"
	"github.com/nodeplug/nodeplug/pkg/localpv/naming"
	"github.com/nodeplug/nodeplug/pkg/localpv/report"
)

const ssdClass = `
ssd:
  volumeMode: Block
  blockCleanerCommand: ["/scripts/quick_reset.sh"]
  diskSelector: {rotational: false, minSize: 1Gi}
`

func ssdDisk(name, serial, sig string) *report.Disk {
	return &report.Disk{Name: name, Size: 100 << 30, Model: "Samsung SSD 860 ", Vendor: "ATA", Serial: serial,
		WWN: "naa.5002538e40a1b2c3", Signature: sig}
}

func diskReport(node string, vols map[string]*report.Disk) *report.Report {
	r := fsReport(node)
	c := report.Class{Name: "ssd"}
	for link, d := range vols {
		c.Volumes = append(c.Volumes, report.Volume{Name: link, Kind: report.KindBlock, Capacity: d.Size, Disk: d})
	}
	r.Classes = append(r.Classes, c)
	r.Disks = []report.Disk{*ssdDisk("sda", "S1", "none"), {Name: "sdb", Size: 1 << 40, Rotational: true, Signature: "ext4"}}
	r.DisksTotal = 2
	return r
}

func newDiskFixture(t *testing.T) *fixture {
	return newFixture(t, map[string]string{config.KeyLabelsForPV: "{team: storage}",
		config.KeyStorageClassMap: fastClass + ssdClass}, newNode("a", nil), newClass("ssd", v1.PersistentVolumeReclaimDelete))
}

func TestSelectedDiskBecomesPVWithLabels(t *testing.T) {
	f := newDiskFixture(t)
	before := counterValue(t, metrics.SkippedDisks.WithLabelValues("ssd", config.SkipSignature))
	f.discover("a", diskReport("a", map[string]*report.Disk{
		"wwn-0x1": ssdDisk("sda", "S1", report.SignatureNone),
		"wwn-0x2": ssdDisk("sdb", "S2 / x", "ext4"),
	}))
	pv := f.pv(naming.PVName("a", "/dev/disk/by-id/wwn-0x1"))
	if pv == nil {
		t.Fatal("no PV for the unused disk")
	}
	if pv.Spec.Local.Path != "/dev/disk/by-id/wwn-0x1" || *pv.Spec.VolumeMode != v1.PersistentVolumeBlock {
		t.Errorf("bad source: %+v", pv.Spec.Local)
	}
	want := map[string]string{publishing.LabelDiskRotational: "false", publishing.LabelDiskModel: "Samsung_SSD_860", publishing.LabelDiskVendor: "ATA",
		publishing.LabelDiskSerial: "S1", publishing.LabelDiskWWN: "naa.5002538e40a1b2c3", "team": "storage", jobs.LabelManagedBy: jobs.ManagedByValue}
	for k, v := range want {
		if pv.Labels[k] != v {
			t.Errorf("label %s = %q, want %q", k, pv.Labels[k], v)
		}
	}
	if f.pv(naming.PVName("a", "/dev/disk/by-id/wwn-0x2")) != nil {
		t.Error("a disk with a file system was published")
	}
	f.wantEvent("DiskSkipped Disk sdb (/dev/disk/by-id/wwn-0x2) matches class ssd but is not published: HasSignature (signature ext4")
	if got := counterValue(t, metrics.SkippedDisks.WithLabelValues("ssd", config.SkipSignature)) - before; got != 1 {
		t.Errorf("skipped metric grew by %v", got)
	}
}

// TestDiskKeepsItsPVAcrossRenames: kernel names change after a reboot, and
// two disks may swap them; each PV follows its stable link.
func TestDiskKeepsItsPVAcrossRenames(t *testing.T) {
	f := newDiskFixture(t)
	f.discover("a", diskReport("a", map[string]*report.Disk{
		"wwn-0x1": ssdDisk("sda", "S1", report.SignatureNone), "wwn-0x3": ssdDisk("sdc", "S3", report.SignatureNone)}))
	one, three := f.pv(naming.PVName("a", "/dev/disk/by-id/wwn-0x1")), f.pv(naming.PVName("a", "/dev/disk/by-id/wwn-0x3"))
	if one == nil || three == nil {
		t.Fatal("PVs not created")
	}
	f.setPhase(one.Name, v1.VolumeBound, true)
	// After a reboot the disks swapped names, and the bound one's user
	// wrote a file system on it.
	f.discover("a", diskReport("a", map[string]*report.Disk{
		"wwn-0x1": ssdDisk("sdc", "S1", "xfs"), "wwn-0x3": ssdDisk("sda", "S3", report.SignatureNone)}))
	pvs, err := f.kube.CoreV1().PersistentVolumes().List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(pvs.Items) != 2 {
		t.Fatalf("got %d PVs, want the same 2", len(pvs.Items))
	}
	for _, pv := range pvs.Items {
		if pv.UID != one.UID && pv.UID != three.UID {
			t.Errorf("PV %s is new", pv.Name)
		}
		if _, missing := pv.Annotations[jobs.AnnVolumeMissing]; missing {
			t.Errorf("PV %s marked missing", pv.Name)
		}
	}
	for _, e := range f.events() {
		if strings.Contains(e, "DiskSkipped") {
			t.Errorf("a disk with its own PV was judged again: %s", e)
		}
	}
}

// createDiskState creates node a's NodeDiskState, as its watcher does.
func (f *fixture) createDiskState() {
	f.t.Helper()
	s := &v1alpha1.NodeDiskState{ObjectMeta: metav1.ObjectMeta{Name: "a"},
		Spec: v1alpha1.NodeDiskStateSpec{NodeName: "a", Digest: strings.Repeat("a", 64), ObservedTime: metav1.NewTime(start)}}
	u, err := v1alpha1.ToUnstructured(s)
	if err != nil {
		f.t.Fatal(err)
	}
	if _, err := f.dyn.Resource(v1alpha1.SchemeGroupVersionResource).Create(f.t.Context(), u, metav1.CreateOptions{}); err != nil {
		f.t.Fatal(err)
	}
}

// diskStatus returns the status of node a's NodeDiskState.
func (f *fixture) diskStatus() v1alpha1.NodeDiskStateStatus {
	f.t.Helper()
	got, err := f.dyn.Resource(v1alpha1.SchemeGroupVersionResource).Get(f.t.Context(), "a", metav1.GetOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	state, err := v1alpha1.FromUnstructured(got)
	if err != nil {
		f.t.Fatal(err)
	}
	return state.Status
}

func TestInventoryIsRecordedInStatus(t *testing.T) {
	f := newDiskFixture(t)
	f.createDiskState()
	r := diskReport("a", nil)
	f.discover("a", r)
	st := f.diskStatus()
	if st.DisksTotal != 2 || len(st.Disks) != 2 || st.Disks[0].Name != "sda" || st.Disks[0].Serial != "S1" ||
		!st.Disks[1].Rotational || st.Disks[1].Signature != "ext4" || st.InventoryTime == nil {
		t.Errorf("bad status: %+v", st)
	}
	patches := func() int {
		n := 0
		for _, a := range f.dyn.Actions() {
			if a.GetVerb() == "patch" && a.GetSubresource() == "status" {
				n++
			}
		}
		return n
	}
	n := patches()
	f.discover("a", r)
	if patches() != n {
		t.Error("an unchanged inventory was written again")
	}
}
