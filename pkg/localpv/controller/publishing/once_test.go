package publishing_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	storagelisters "k8s.io/client-go/listers/storage/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2/ktesting"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/nodeplug/nodeplug/pkg/localpv/config"
	"github.com/nodeplug/nodeplug/pkg/localpv/controller/publishing"
	"github.com/nodeplug/nodeplug/pkg/localpv/controller/pvops/pvopstest"
	"github.com/nodeplug/nodeplug/pkg/localpv/controller/pvstate"
	"github.com/nodeplug/nodeplug/pkg/localpv/identity"
	"github.com/nodeplug/nodeplug/pkg/localpv/jobs"
	"github.com/nodeplug/nodeplug/pkg/localpv/report"
	"github.com/nodeplug/nodeplug/pkg/localpv/unwiped/unwipedtest"
	"github.com/nodeplug/nodeplug/pkg/localpv/validation"
)

// Disks of the published-once cases: sdb (W) and its partition sdb1, sdc
// (C) that holds a file system, sdd (D) with two directories on it.
var (
	diskW  = identity.WWN("naa.5000c500a1b2c3d4")
	partW1 = identity.Partition(diskW, 1<<20, 10<<30)
	diskC  = identity.WWN("naa.5000c500a1b2c3d5")
	fsOnC  = identity.FS("1b4e28ba-2fa1-11d2-883f-0016d3cca427", 1, []byte{2, 0, 0, 0})
	dirD1  = identity.FS("9c2d0d6e-6a3b-4a0b-8f35-1f1a0b3c4d5e", 1, []byte{1, 0, 0, 0})
	dirD2  = identity.FS("9c2d0d6e-6a3b-4a0b-8f35-1f1a0b3c4d5e", 1, []byte{2, 0, 0, 0})
	unused = &report.Disk{Signature: report.SignatureNone}
)

// onceVolume is a reported volume of class fast (a directory) or blk (a
// block device). A PV's own volume is reported with it, as discovery does.
type onceVolume struct {
	class string
	vol   report.Volume
}

func dirVolume(name string, id identity.ID, dev, whole string) onceVolume {
	return onceVolume{"fast", report.Volume{Name: name, Kind: report.KindDirectory, Capacity: 10 << 30, ID: id, Dev: dev, Whole: whole}}
}

func blockVolume(name string, id identity.ID, dev, whole string, use *report.Disk) onceVolume {
	if use != nil {
		u := *use
		u.Name, u.Size = dev, 10<<30
		use = &u
	}
	return onceVolume{"blk", report.Volume{Name: name, Kind: report.KindBlock, Capacity: 10 << 30, ID: id, Dev: dev, Whole: whole, Use: use}}
}

// blkPV is the master's PV of /mnt/blk/<name> recording disk id.
func blkPV(name string, id identity.ID) *v1.PersistentVolume {
	pv := existingPV(name, id, v1.VolumeBound)
	pv.Name = "blk-" + name
	pv.Labels[jobs.LabelVolumeID] = "blk-" + name
	pv.Annotations[jobs.AnnHostPath] = "/mnt/blk/" + name
	pv.Annotations[jobs.AnnClass] = "blk"
	pv.Spec.Local.Path = "/mnt/blk/" + name
	return pv
}

// TestPublishedOnce (N3): one disk is never published twice, whether as a
// whole disk and one of its partitions (a), as a block device and as the
// device a directory's file system lives on (b), behind one of more than
// 64 foreign PVs that discovery could not resolve (c), or when a plain
// Block class links a disk that is in use (d).
func TestPublishedOnce(t *testing.T) {
	many := make([]report.Held, report.MaxHeld)
	for i := range many {
		many[i] = report.Held{Path: fmt.Sprintf("/var/lib/other/pv%d", i), Kind: report.KindDirectory,
			ID: identity.FileHandle(1, []byte(fmt.Sprint(i)))}
	}
	tests := []struct {
		name string
		vols []onceVolume
		pvs  []*v1.PersistentVolume
		held []report.Held
		// omitted is the report's count of held paths beyond MaxHeld.
		omitted   int
		wantPVs   int
		wantEvent string
	}{
		{name: "a partition of a disk that has a PV", vols: []onceVolume{blockVolume("sdb1", partW1, "sdb1", "sdb", unused)},
			pvs: []*v1.PersistentVolume{blkPV("sdb", diskW)}, wantEvent: "DiskAlreadyPublished"},
		{name: "a disk whose partition is behind a hand-made PV", vols: []onceVolume{blockVolume("sdb", diskW, "sdb", "", nil)},
			held:      []report.Held{{Path: "/mnt/disks/sdb1", Kind: report.KindBlock, ID: partW1, Dev: "sdb1", Whole: "sdb"}},
			wantEvent: "DiskAlreadyPublished"},
		{name: "a disk with partitions is not published", vols: []onceVolume{blockVolume("sdb", diskW, "sdb", "", &report.Disk{Partitions: 1})},
			wantEvent: "HasPartitions"},
		{name: "two partitions of one disk are two volumes", vols: []onceVolume{blockVolume("sdb1", partW1, "sdb1", "sdb", nil),
			blockVolume("sdb2", identity.Partition(diskW, 11<<30, 1<<30), "sdb2", "sdb", unused)},
			pvs: []*v1.PersistentVolume{blkPV("sdb1", partW1)}, wantPVs: 1},
		{name: "a block device that a directory's file system lives on", vols: []onceVolume{dirVolume("vol-c", fsOnC, "sdc", ""),
			blockVolume("sdc", diskC, "sdc", "", nil)},
			pvs: []*v1.PersistentVolume{existingPV("vol-c", fsOnC, v1.VolumeBound)}, wantEvent: "DiskAlreadyPublished",
		},
		{name: "a directory on a partition of a disk that has a block PV", vols: []onceVolume{blockVolume("sdc", diskC, "sdc", "", nil),
			dirVolume("vol-c", fsOnC, "sdc1", "sdc")},
			pvs: []*v1.PersistentVolume{blkPV("sdc", diskC)}, wantEvent: "DiskAlreadyPublished"},
		{name: "a directory and a block device of one disk reported together", vols: []onceVolume{
			dirVolume("vol-c", fsOnC, "sdc", ""), blockVolume("sdc", diskC, "sdc", "", unused)},
			wantPVs: 1, wantEvent: "DiskAlreadyPublished"},
		{name: "two directories on one file system are two volumes", vols: []onceVolume{
			dirVolume("vol-d1", dirD1, "sdd", ""), dirVolume("vol-d2", dirD2, "sdd", "")}, wantPVs: 2},
		{name: "64 held paths resolved", vols: []onceVolume{dirVolume("vol-d1", dirD1, "sdd", "")}, held: many, wantPVs: 1},
		{name: "65 held paths: the one not resolved refuses every new volume", vols: []onceVolume{
			dirVolume("vol-d1", dirD1, "sdd", ""), blockVolume("sdb", diskW, "sdb", "", unused)},
			held: many, omitted: 1, wantEvent: "HeldPathUnresolved"},
		{name: "a mounted disk linked in a plain Block class", vols: []onceVolume{blockVolume("sde", diskW, "sde", "", &report.Disk{Busy: true, Signature: "ext4"})},
			wantEvent: "InUse"},
		{name: "an md or multipath member linked in a plain Block class", vols: []onceVolume{blockVolume("sde", diskW, "sde", "", &report.Disk{Holders: 1})},
			wantEvent: "HeldByDevice"},
		{name: "a disk with a file system linked in a plain Block class", vols: []onceVolume{blockVolume("sde", diskW, "sde", "", &report.Disk{Signature: "xfs"})},
			wantEvent: "HasSignature"},
		{name: "an unused disk linked in a plain Block class", vols: []onceVolume{blockVolume("sde", diskW, "sde", "", unused)}, wantPVs: 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := &report.Report{Version: report.Version, Node: "a", Held: tc.held, HeldOmitted: tc.omitted}
			for _, class := range []string{"fast", "blk"} {
				c := report.Class{Name: class}
				for _, v := range tc.vols {
					if v.class == class {
						c.Volumes = append(c.Volumes, v.vol)
					}
				}
				r.Classes = append(r.Classes, c)
			}
			created, events := publishOnce(t, r, tc.pvs)
			if len(created) != tc.wantPVs {
				t.Errorf("PVs created %v, want %d", created, tc.wantPVs)
			}
			if all := strings.Join(events, "\n"); tc.wantEvent != "" && !strings.Contains(all, tc.wantEvent) || tc.wantEvent == "" && all != "" {
				t.Errorf("Events %q, want %q", events, tc.wantEvent)
			}
		})
	}
}

// publishOnce publishes a report of node a with classes fast (directories
// below /mnt/fast) and blk (block devices linked in /mnt/blk) over the
// master's PVs pvs, and returns the PVs created and the Events.
func publishOnce(t *testing.T, r *report.Report, pvs []*v1.PersistentVolume) ([]string, []string) {
	t.Helper()
	_, ctx := ktesting.NewTestContext(t)
	cfg, _, err := config.Parse(map[string]string{config.KeyStorageClassMap: `
fast: {hostDir: /mnt/fast, mountDir: /mnt/fast}
blk: {hostDir: /mnt/blk, mountDir: /mnt/blk, volumeMode: Block, blockCleanerCommand: ["/scripts/quick_reset.sh"]}
`})
	if err != nil {
		t.Fatal(err)
	}
	classes := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	objs := []runtime.Object{}
	for _, name := range []string{"fast", "blk"} {
		sc := fastClass("lpv/" + provisioner)
		sc.Name = name
		objs = append(objs, sc)
		_ = classes.Add(sc)
	}
	for _, pv := range pvs {
		objs = append(objs, pv)
	}
	kube := fake.NewClientset(objs...)
	kube.ClearActions()
	recorder := record.NewFakeRecorder(100)
	state := &fakeState{onNode: pvs}
	p := publishing.New(publishing.Config{Provisioner: cfg, ProvisionerName: provisioner,
		OwnerName: "lpv/" + provisioner, Kube: kube, State: state,
		Classes: storagelisters.NewStorageClassLister(classes), Ops: &pvopstest.Fake{}, Marks: pvstate.New(kube.CoreV1(), testingclock.NewFakeClock(start)), Unwiped: unwipedtest.Store(unwipedtest.Client(), kube, "lpv", testingclock.NewFakeClock(start)),
		Recorder: recorder, Clock: testingclock.NewFakeClock(start), MarksChanged: func() {}, VolumeChanged: func(string) {}})
	res, err := validation.Check(cfg, "a", "a", r)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Rejected) > 0 {
		t.Fatalf("rejected %+v", res.Rejected)
	}
	if err := p.Publish(ctx, testNode(), res, r.AllHeld()); err != nil {
		t.Fatalf("Publish: %v", err)
	}
	var evs []string
	for len(recorder.Events) > 0 {
		evs = append(evs, <-recorder.Events)
	}
	created := createdPVs(kube)
	slices.Sort(created)
	return created, evs
}
