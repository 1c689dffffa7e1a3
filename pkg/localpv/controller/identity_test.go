package controller

import (
	"slices"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	"github.com/nodeplug/nodeplug/pkg/localpv/controller/blockedclaims"
	"github.com/nodeplug/nodeplug/pkg/localpv/controller/machine"
	"github.com/nodeplug/nodeplug/pkg/localpv/identity"
	"github.com/nodeplug/nodeplug/pkg/localpv/jobs"
	"github.com/nodeplug/nodeplug/pkg/localpv/naming"
	"github.com/nodeplug/nodeplug/pkg/localpv/report"
)

// Strong identities of two file systems, as a re-imaged node's data disk
// (the same) or a new machine's disk (another) report them.
var (
	diskA = identity.FS("1b4e28ba-2fa1-11d2-883f-0016d3cca427", 1, []byte{2, 0, 0, 0})
	diskB = identity.FS("9c2d0d6e-6a3b-4a0b-8f35-1f1a0b3c4d5e", 1, []byte{2, 0, 0, 0})
)

// dirReport reports one directory volume of class fast with an identity.
func dirReport(node, name string, id identity.ID) *report.Report {
	r := fsReport(node, name)
	r.Classes[0].Volumes[0].ID = id
	return r
}

func (f *fixture) pvNames() []string {
	f.t.Helper()
	pvs, err := f.kube.CoreV1().PersistentVolumes().List(f.t.Context(), metav1.ListOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	var out []string
	for _, pv := range pvs.Items {
		if pv.DeletionTimestamp == nil {
			out = append(out, pv.Name)
		}
	}
	return out
}

// TestMachineChangeDecidedByDisk covers a node name that runs on a new
// machine while a PV of the old one is kept: what the path leads to now
// decides. The same disk keeps its PV (handed to the new machine, never a
// second PV); a provably different disk gets a new PV; a disk that cannot
// be told apart gets none.
func TestMachineChangeDecidedByDisk(t *testing.T) {
	tests := []struct {
		name      string
		policy    v1.PersistentVolumeReclaimPolicy
		phase     v1.PersistentVolumePhase
		now       identity.ID
		wantNew   bool // a PV for the new machine
		wantOld   bool // the old PV still exists
		wantOwner string
		blocked   bool
		cleanup   bool // a cleanup Job runs (under the new machine)
		event     string
	}{
		{name: "re-imaged node, bound PV: the tenant keeps its disk", policy: v1.PersistentVolumeReclaimDelete, phase: v1.VolumeBound,
			now: diskA, wantOld: true, wantOwner: "m2", event: "MachineChangedDiskKept"},
		{name: "re-imaged node, released PV: handed over, then wiped", policy: v1.PersistentVolumeReclaimDelete, phase: v1.VolumeReleased,
			now: diskA, wantOld: true, wantOwner: "m2", cleanup: true, event: "MachineChangedDiskKept"},
		{name: "new machine with a new disk, bound PV: kept and blocked, the new disk published", policy: v1.PersistentVolumeReclaimDelete,
			phase: v1.VolumeBound, now: diskB, wantNew: true, wantOld: true, wantOwner: "m1", blocked: true},
		{name: "new machine with a new disk, released Delete PV: dropped unwiped", policy: v1.PersistentVolumeReclaimDelete,
			phase: v1.VolumeReleased, now: diskB, wantNew: true, event: "without a wipe"},
		{name: "new machine with a new disk, released Retain PV: kept", policy: v1.PersistentVolumeReclaimRetain,
			phase: v1.VolumeReleased, now: diskB, wantNew: true, wantOld: true, wantOwner: "m1"},
		{name: "a disk that cannot be told apart: no PV", policy: v1.PersistentVolumeReclaimDelete, phase: v1.VolumeBound,
			now: identity.FileHandle(1, []byte("x")), wantOld: true, wantOwner: "m1", blocked: true, event: "DiskIdentityUnknown"},
		{name: "a disk with no identity now: no PV", policy: v1.PersistentVolumeReclaimDelete, phase: v1.VolumeBound,
			wantOld: true, wantOwner: "m1", blocked: true, event: "DiskIdentityUnknown"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, nil, machineNode("a", "m1", "u1"), newClass("fast", tc.policy))
			f.discover("a", dirReport("a", "vol1", diskA))
			oldID := naming.MachineVolumeID("a", vol1, "m1", "u1")
			old := naming.PVNameForID(oldID)
			f.setPhase(old, tc.phase, true)
			f.setMachine("a", "m2", "u2")
			f.sync(nodeKey("a"))
			f.events()

			f.discoverRaw("a", dirReport("a", "vol1", tc.now))
			f.sync(volKey(oldID))
			fresh := f.pv(naming.PVNameForID(naming.MachineVolumeID("a", vol1, "m2", "u2")))
			if (fresh != nil) != tc.wantNew {
				t.Errorf("PV for the new machine = %v, want %v (PVs %v)", fresh != nil, tc.wantNew, f.pvNames())
			}
			if fresh != nil && fresh.Annotations[jobs.AnnDiskID] != string(tc.now) {
				t.Errorf("new PV records disk %q, want %q", fresh.Annotations[jobs.AnnDiskID], tc.now)
			}
			pv := f.pv(old)
			if got := pv != nil && pv.DeletionTimestamp == nil; got != tc.wantOld {
				t.Fatalf("old PV exists = %v, want %v", got, tc.wantOld)
			}
			if pv != nil && pv.Annotations[jobs.AnnMachineID] != tc.wantOwner {
				t.Errorf("old PV's machine = %q, want %q", pv.Annotations[jobs.AnnMachineID], tc.wantOwner)
			}
			if pv != nil && tc.wantOwner == "m2" && machine.Marked(pv) {
				t.Error("a PV handed to the new machine is still marked")
			}
			if _, blocked := f.blockedClaims()[blockedclaims.Key("default", "claim")]; blocked != tc.blocked {
				t.Errorf("claim blocked = %v, want %v", blocked, tc.blocked)
			}
			js := f.jobNames(jobs.RoleCleanup)
			if (len(js) > 0) != tc.cleanup {
				t.Errorf("cleanup Jobs %v, want some = %v", js, tc.cleanup)
			}
			for _, name := range js {
				args := f.job(name).Spec.Template.Spec.Containers[0].Args
				if !slices.Contains(args, "--machine-id=m2") || !slices.Contains(args, "--disk-id="+string(diskA)) {
					t.Errorf("cleanup Job %s does not carry the new machine and the disk: %v", name, args)
				}
			}
			if tc.event != "" {
				f.wantEvent(tc.event)
			}
		})
	}
}

// TestDiskChangedOnItsMachine: a path of the same machine that leads to
// another disk keeps a used PV, marks it, refuses its claim's new pods and
// publishes nothing there; the disk coming back undoes it all.
func TestDiskChangedOnItsMachine(t *testing.T) {
	f := newFixture(t, nil, machineNode("a", "m1", "u1"), newClass("fast", v1.PersistentVolumeReclaimDelete))
	f.discover("a", dirReport("a", "vol1", diskA))
	name := naming.PVNameForID(naming.MachineVolumeID("a", vol1, "m1", "u1"))
	f.setPhase(name, v1.VolumeBound, true)
	f.events()

	f.discoverRaw("a", dirReport("a", "vol1", diskB))
	pv := f.pv(name)
	if pv == nil || pv.Labels[jobs.LabelDiskReplaced] != "true" || pv.Annotations[jobs.AnnDiskReplaced] == "" {
		t.Fatalf("PV not kept and marked disk-replaced: %v", pv)
	}
	if got := f.pvNames(); len(got) != 1 {
		t.Errorf("another disk at a used PV's path was published: %v", got)
	}
	if _, ok := f.blockedClaims()[blockedclaims.Key("default", "claim")]; !ok {
		t.Error("the claim of a PV whose path leads to another disk is not blocked")
	}
	f.wantEvent("DiskReplaced")

	f.discoverRaw("a", dirReport("a", "vol1", diskA))
	if pv := f.pv(name); pv.Labels[jobs.LabelDiskReplaced] != "" {
		t.Errorf("mark not cleared when the disk came back: %v", pv.Labels)
	}
	if b := f.blockedClaims(); len(b) != 0 {
		t.Errorf("claims still blocked: %v", b)
	}
}

// TestUnusedPVOfAReplacedDiskGoes: an Available PV whose path leads to
// another disk is deleted; the new disk is published by the next report.
func TestUnusedPVOfAReplacedDiskGoes(t *testing.T) {
	f := newFixture(t, nil, machineNode("a", "m1", "u1"), newClass("fast", v1.PersistentVolumeReclaimDelete))
	f.discover("a", dirReport("a", "vol1", diskA))
	name := naming.PVNameForID(naming.MachineVolumeID("a", vol1, "m1", "u1"))
	f.setPhase(name, v1.VolumeAvailable, false)
	f.discoverRaw("a", dirReport("a", "vol1", diskB))
	if pv := f.pv(name); pv != nil && pv.DeletionTimestamp == nil {
		t.Fatalf("unused PV of a replaced disk kept: %v", pv.Annotations)
	}
	f.discoverRaw("a", dirReport("a", "vol1", diskB))
	pv := f.pv(name)
	if pv == nil || pv.Annotations[jobs.AnnDiskID] != string(diskB) {
		t.Errorf("the new disk is not published: %v", pv)
	}
}

// blockReport reports block volumes of class blk: name → (device, identity).
func blockReport(node string, vols ...report.Volume) *report.Report {
	r := fsReport(node)
	r.Classes[1].Volumes = vols
	return r
}

func blockVol(name, dev string, id identity.ID) report.Volume {
	return report.Volume{Name: name, Kind: report.KindBlock, Capacity: 1 << 30, Dev: dev, ID: id}
}

// TestDiskPublishedOnce: a disk behind a PV is never published again,
// under any path, class or provisioner, and a disk that cannot be proven
// is not published at all.
func TestDiskPublishedOnce(t *testing.T) {
	wwn := identity.WWN("naa.5000c500a1b2c3d4")
	foreign := func(path string) *v1.PersistentVolume {
		return &v1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "upstream-pv"},
			Spec: v1.PersistentVolumeSpec{
				PersistentVolumeSource: v1.PersistentVolumeSource{Local: &v1.LocalVolumeSource{Path: path}},
				VolumeMode:             ptr.To(v1.PersistentVolumeBlock),
				NodeAffinity: &v1.VolumeNodeAffinity{Required: &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{{
					MatchExpressions: []v1.NodeSelectorRequirement{{Key: v1.LabelHostname, Operator: v1.NodeSelectorOpIn, Values: []string{"a-host"}}}}}}}}}
	}
	tests := []struct {
		name   string
		objs   []runtime.Object
		report *report.Report
		want   []string // published host paths
		event  string
	}{
		{name: "two links to one device in one report", report: blockReport("a", blockVol("sdb", "sdb", wwn), blockVol("wwn-1", "sdb", wwn)),
			want: []string{"/mnt/blk/sdb"}, event: "DiskAlreadyPublished"},
		{name: "the same disk under two identities' device name", report: blockReport("a", blockVol("x", "sdc", wwn), blockVol("y", "sdc", identity.Loop("/i", 0, 0))),
			want: []string{"/mnt/blk/x"}, event: "DiskAlreadyPublished"},
		{name: "a disk behind an upstream PV's path", objs: []runtime.Object{foreign("/dev/sdb")},
			report: withHeld(blockReport("a", blockVol("wwn-1", "sdb", wwn)), report.Held{Path: "/dev/sdb", Dev: "sdb", ID: wwn}),
			event:  "DiskAlreadyPublished"},
		{name: "another PV's path discovery cannot resolve holds back block volumes", objs: []runtime.Object{foreign("/srv/raw/x")},
			report: withHeld(blockReport("a", blockVol("wwn-1", "sdb", wwn)), report.Held{Path: "/srv/raw/x", Error: "not visible"}),
			event:  "HeldPathUnresolved"},
		{name: "a disk with no identity", report: blockReport("a", blockVol("sdb", "sdb", "")), event: "DiskIdentityUnknown"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			objs := append([]runtime.Object{machineNode("a", "m1", "u1"), newClass("fast", v1.PersistentVolumeReclaimDelete),
				newClass("blk", v1.PersistentVolumeReclaimDelete)}, tc.objs...)
			f := newFixture(t, nil, objs...)
			f.discoverRaw("a", tc.report)
			var got []string
			pvs, _ := f.kube.CoreV1().PersistentVolumes().List(t.Context(), metav1.ListOptions{})
			for _, pv := range pvs.Items {
				if managed(&pv) {
					got = append(got, pv.Spec.Local.Path)
				}
			}
			if strings.Join(got, ",") != strings.Join(tc.want, ",") {
				t.Errorf("published %v, want %v", got, tc.want)
			}
			f.wantEvent(tc.event)
		})
	}
}

func withHeld(r *report.Report, held ...report.Held) *report.Report {
	r.Held = held
	return r
}

// TestDiskOfAnotherPathIsNotPublishedAgain: a disk that keeps its PV under
// one path is not published under a second one later.
func TestDiskOfAnotherPathIsNotPublishedAgain(t *testing.T) {
	f := newFixture(t, nil, machineNode("a", "m1", "u1"), newClass("fast", v1.PersistentVolumeReclaimDelete),
		newClass("blk", v1.PersistentVolumeReclaimDelete))
	wwn := identity.WWN("naa.1")
	f.discoverRaw("a", blockReport("a", blockVol("sdb", "sdb", wwn)))
	f.discoverRaw("a", blockReport("a", blockVol("sdb", "sdb", wwn), blockVol("wwn-1", "sdb", wwn)))
	if got := f.pvNames(); len(got) != 1 {
		t.Errorf("PVs %v, want the one of /mnt/blk/sdb", got)
	}
	if f.pv(naming.PVNameForID(naming.MachineVolumeID("a", "/mnt/blk/wwn-1", "m1", "u1"))) != nil {
		t.Error("the disk was published a second time under another link")
	}
}

// TestLegacyPVStampedNotRepublished: a PV published before disks were
// recorded is stamped with its disk on first sight and keeps being the
// volume's PV.
func TestLegacyPVStampedNotRepublished(t *testing.T) {
	f := newFixture(t, nil, machineNode("a", "m1", "u1"), newClass("fast", v1.PersistentVolumeReclaimDelete))
	f.discover("a", dirReport("a", "vol1", diskA))
	name := naming.PVNameForID(naming.MachineVolumeID("a", vol1, "m1", "u1"))
	pv := f.pv(name)
	delete(pv.Annotations, jobs.AnnDiskID)
	if _, err := f.kube.CoreV1().PersistentVolumes().Update(t.Context(), pv, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.syncStores()
	f.discoverRaw("a", dirReport("a", "vol1", diskA))
	if got := f.pv(name).Annotations[jobs.AnnDiskID]; got != string(diskA) {
		t.Errorf("legacy PV stamped with %q, want %q", got, diskA)
	}
	if got := f.pvNames(); len(got) != 1 {
		t.Errorf("PVs %v, want only %s", got, name)
	}
}

// TestAnotherInstallationsPVsAndClasses: a master acts only on PVs of its
// own provisioner name, and refuses a class another installation claimed.
func TestAnotherInstallationsPVsAndClasses(t *testing.T) {
	t.Run("a PV of another provisioner name is not wiped", func(t *testing.T) {
		f := newFixture(t, nil, machineNode("a", "m1", "u1"), newClass("fast", v1.PersistentVolumeReclaimDelete))
		f.discover("a", dirReport("a", "vol1", diskA))
		id := naming.MachineVolumeID("a", vol1, "m1", "u1")
		pv := f.pv(naming.PVNameForID(id))
		pv.Annotations[jobs.AnnProvisionedBy] = "other.example.com/local"
		if _, err := f.kube.CoreV1().PersistentVolumes().Update(t.Context(), pv, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		f.setPhase(pv.Name, v1.VolumeReleased, true)
		f.sync(volKey(id))
		if js := f.jobNames(jobs.RoleCleanup); len(js) != 0 {
			t.Errorf("another installation's PV got cleanup Jobs %v", js)
		}
	})
	t.Run("a class claimed by another installation is refused", func(t *testing.T) {
		sc := newClass("fast", v1.PersistentVolumeReclaimDelete)
		sc.Annotations = map[string]string{jobs.AnnClassOwner: "other-ns/nodeplug.io/local-volume-provisioner"}
		f := newFixture(t, nil, machineNode("a", "m1", "u1"), sc)
		f.discover("a", dirReport("a", "vol1", diskA))
		if got := f.pvNames(); len(got) != 0 {
			t.Errorf("published %v into a class another installation owns", got)
		}
		f.wantEvent("ClassOwnedByAnotherInstallation")
	})
	t.Run("an unclaimed class is claimed", func(t *testing.T) {
		f := newFixture(t, nil, machineNode("a", "m1", "u1"), newClass("fast", v1.PersistentVolumeReclaimDelete))
		f.discover("a", dirReport("a", "vol1", diskA))
		sc, err := f.kube.StorageV1().StorageClasses().Get(t.Context(), "fast", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got := sc.Annotations[jobs.AnnClassOwner]; got != testNS+"/nodeplug.io/local-volume-provisioner" {
			t.Errorf("class owner %q", got)
		}
	})
}

// TestBlockedOnlyWhileBoundToTheLiveClaim: a claim deleted and created
// again under the same name is not refused (a StatefulSet's new claim).
func TestBlockedOnlyWhileBoundToTheLiveClaim(t *testing.T) {
	f, old := replacedFixture(t)
	if len(f.blockedClaims()) != 1 {
		t.Fatal("setup: claim not blocked")
	}
	if err := f.kube.CoreV1().PersistentVolumeClaims("default").Delete(t.Context(), "claim", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	f.ensureClaim("default", "claim", "new-claim-uid")
	if b := f.blockedClaims(); len(b) != 0 {
		t.Errorf("a re-created claim of PV %s's claim name is blocked: %v", old, b)
	}
}

// TestClaimHealthStatus: a kept PV of a replaced machine sets DataLoss on
// its claim's health status; the machine coming back clears it.
func TestClaimHealthStatus(t *testing.T) {
	f, _ := replacedFixture(t)
	claim, err := f.kube.CoreV1().PersistentVolumeClaims("default").Get(t.Context(), "claim", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	h := claim.Status.HealthStatus
	if h == nil || len(h.HealthConditions) != 1 || h.HealthConditions[0].Status != v1.VolumeHealthDataLoss ||
		h.HealthConditions[0].Reason != "MachineReplaced" {
		t.Fatalf("claim health %+v, want DataLoss/MachineReplaced", h)
	}
	f.setMachine("a", "m1", "u1")
	f.sync(nodeKey("a"))
	claim, _ = f.kube.CoreV1().PersistentVolumeClaims("default").Get(t.Context(), "claim", metav1.GetOptions{})
	if claim.Status.HealthStatus != nil {
		t.Errorf("claim health not cleared: %+v", claim.Status.HealthStatus)
	}
}

// TestHeldPaths lists the paths discovery must resolve: other provisioners'
// local PVs on the node, not the master's own.
func TestHeldPaths(t *testing.T) {
	other := &v1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "upstream"},
		Spec: v1.PersistentVolumeSpec{PersistentVolumeSource: v1.PersistentVolumeSource{Local: &v1.LocalVolumeSource{Path: "/mnt/disks/sdb"}},
			NodeAffinity: &v1.VolumeNodeAffinity{Required: &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{{
				MatchExpressions: []v1.NodeSelectorRequirement{{Key: v1.LabelHostname, Operator: v1.NodeSelectorOpIn, Values: []string{"a-host"}}}}}}}}}
	f := newFixture(t, nil, machineNode("a", "m1", "u1"), newClass("fast", v1.PersistentVolumeReclaimDelete), other)
	f.discover("a", dirReport("a", "vol1", diskA))
	node, _ := f.c.nodeLister.Get("a")
	if got := f.c.heldPaths(node); strings.Join(got, ",") != "/mnt/disks/sdb" {
		t.Errorf("held paths %v, want the upstream PV's only", got)
	}
}

// TestUnusedPVBeingDeletedDoesNotHoldItsDisk: the same disk is published
// for a node's new machine while the old machine's never-used PV is still
// being deleted; a used one being deleted still holds its disk.
func TestUnusedPVBeingDeletedDoesNotHoldItsDisk(t *testing.T) {
	for _, tc := range []struct {
		name    string
		claimed bool
		wantNew bool
	}{
		{name: "never used", wantNew: true},
		{name: "used", claimed: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, nil, machineNode("a", "m1", "u1"), newClass("fast", v1.PersistentVolumeReclaimRetain))
			f.discover("a", dirReport("a", "vol1", diskA))
			old := naming.PVNameForID(naming.MachineVolumeID("a", vol1, "m1", "u1"))
			pv := f.pv(old)
			if tc.claimed {
				pv.Spec.ClaimRef = &v1.ObjectReference{Namespace: "default", Name: "claim", UID: "claim-uid"}
			}
			pv.DeletionTimestamp = ptr.To(metav1.NewTime(start))
			if _, err := f.kube.CoreV1().PersistentVolumes().Update(t.Context(), pv, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
			f.syncStores()
			f.setMachine("a", "m2", "u2")
			f.discoverRaw("a", dirReport("a", "vol1", diskA))
			fresh := f.pv(naming.PVNameForID(naming.MachineVolumeID("a", vol1, "m2", "u2")))
			if (fresh != nil) != tc.wantNew {
				t.Errorf("new machine's PV published = %v, want %v", fresh != nil, tc.wantNew)
			}
		})
	}
}
