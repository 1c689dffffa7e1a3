package volumecheck

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/component-base/metrics/testutil"
	"k8s.io/klog/v2/ktesting"

	"github.com/nodeplug/nodeplug/pkg/localpv/identity"
	"github.com/nodeplug/nodeplug/pkg/localpv/jobs"
	"github.com/nodeplug/nodeplug/pkg/util/metricstest"
)

// Identities of the fixtures: two directories on two file systems, two
// block devices, two partitions of one disk, and weak ones.
var (
	dirA  = identity.FS("8f1c2b4e-0000-4000-8000-00000000000a", 1, []byte{0x0a, 2})
	dirB  = identity.FS("8f1c2b4e-0000-4000-8000-00000000000b", 1, []byte{0x0b, 2})
	devA  = identity.WWN("naa.5000c500a1b2c3d4")
	devB  = identity.WWN("naa.5000c500a1b2c3d5")
	part1 = identity.Partition(devA, 1<<20, 512<<20)
	part2 = identity.Partition(devA, 513<<20, 512<<20)
	fhA   = identity.FileHandle(1, []byte{0x0a, 2})
	loopA = identity.Loop("/var/disks/a.img", 0, 0)
)

func localPV(name, path string, id identity.ID) *v1.PersistentVolume {
	pv := &v1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1.PersistentVolumeSpec{PersistentVolumeSource: v1.PersistentVolumeSource{Local: &v1.LocalVolumeSource{Path: path}}}}
	if id != "" {
		pv.Annotations = map[string]string{jobs.AnnDiskID: string(id)}
	}
	return pv
}

// found is a Reader over a fixed view of the node: what each path leads to.
type found map[string]any

func (f found) read(path string, _ identity.ID) (identity.ID, error) {
	switch v := f[path].(type) {
	case identity.ID:
		return v, nil
	case error:
		return "", v
	}
	return "", errors.New("no such path")
}

// TestCheck covers the decisions of the check, each a named case; the
// refusals name the disk found, the other PV when known, the fix, and
// never suggest editing annotations.
func TestCheck(t *testing.T) {
	unreadable := errors.New("failed to read the file handle of /mnt/disks/vol0: input/output error")
	cases := map[string]struct {
		seen       []*v1.PersistentVolume
		pv         *v1.PersistentVolume
		node       found
		wantReason Reason
		wantIn     []string
	}{
		"match directory":             {pv: localPV("pv-a", "/mnt/disks/vol0", dirA), node: found{"/mnt/disks/vol0": dirA}},
		"match block device":          {pv: localPV("pv-a", "/dev/disk/by-id/a", devA), node: found{"/dev/disk/by-id/a": devA}},
		"match partition":             {pv: localPV("pv-a", "/dev/sdb1", part1), node: found{"/dev/sdb1": part1}},
		"no annotation is upstream's": {pv: localPV("pv-a", "/mnt/disks/vol0", ""), node: found{"/mnt/disks/vol0": unreadable}},
		"not a local PV":              {pv: &v1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "nfs"}}},
		"invalid annotation is ignored": {pv: localPV("pv-a", "/mnt/disks/vol0", "not an identity"),
			node: found{"/mnt/disks/vol0": dirB}},
		"swapped directory, other PV known": {
			seen: []*v1.PersistentVolume{localPV("pv-b", "/mnt/disks/vol1", dirB)},
			pv:   localPV("pv-a", "/mnt/disks/vol0", dirA), node: found{"/mnt/disks/vol0": dirB},
			wantReason: ReasonMismatch,
			wantIn:     []string{"pv-a", "/mnt/disks/vol0", string(dirB), "the disk of PV pv-b", string(dirA), "nothing was mounted or written", "Restore the mount"}},
		"swapped directory, other PV unknown": {
			pv: localPV("pv-a", "/mnt/disks/vol0", dirA), node: found{"/mnt/disks/vol0": dirB},
			wantReason: ReasonMismatch,
			wantIn:     []string{string(dirB), "no local PV mounted on this node was published for", "Restore the mount"}},
		"swapped block device": {
			seen: []*v1.PersistentVolume{localPV("pv-b", "/dev/disk/by-id/b", devB)},
			pv:   localPV("pv-a", "/dev/disk/by-id/a", devA), node: found{"/dev/disk/by-id/a": devB},
			wantReason: ReasonMismatch, wantIn: []string{string(devB), "the disk of PV pv-b"}},
		"other partition of the same disk": {
			seen: []*v1.PersistentVolume{localPV("pv-b", "/dev/sdb2", part2)},
			pv:   localPV("pv-a", "/dev/sdb1", part1), node: found{"/dev/sdb1": part2},
			wantReason: ReasonMismatch, wantIn: []string{"the disk of PV pv-b"}},
		"whole disk where a partition was": {
			seen: []*v1.PersistentVolume{localPV("pv-b", "/dev/sdb", devA)},
			pv:   localPV("pv-a", "/dev/sdb1", part1), node: found{"/dev/sdb1": devA},
			wantReason: ReasonMismatch, wantIn: []string{"the disk of PV pv-b"}},
		"strong identity unreadable is refused": {
			pv: localPV("pv-a", "/mnt/disks/vol0", dirA), node: found{"/mnt/disks/vol0": unreadable},
			wantReason: ReasonUnreadable, wantIn: []string{"cannot prove", "input/output error", "Restore the mount"}},
		"strong identity, path reports none": {
			pv: localPV("pv-a", "/dev/sdb", devA), node: found{"/dev/sdb": identity.ID("")},
			wantReason: ReasonUnreadable, wantIn: []string{"reports no identity"}},
		"strong identity, weaker kind found": {
			pv: localPV("pv-a", "/mnt/disks/vol0", dirA), node: found{"/mnt/disks/vol0": fhA},
			wantReason: ReasonUnreadable, wantIn: []string{string(fhA), "cannot be compared"}},
		"weak identity unknown is allowed": {
			pv: localPV("pv-a", "/mnt/disks/vol0", fhA), node: found{"/mnt/disks/vol0": unreadable}},
		"weak identity of another kind is allowed": {
			pv: localPV("pv-a", "/mnt/disks/vol0", fhA), node: found{"/mnt/disks/vol0": dirA}},
		"legacy file handle, another file system's root found": {
			pv: localPV("pv-a", "/mnt/disks/vol0", fhA), node: found{"/mnt/disks/vol0": dirB},
			wantReason: ReasonMismatch},
		"UUID-less file systems swapped": {
			pv:         localPV("pv-a", "/mnt/disks/vol0", identity.FileHandleOnDisk(1, []byte{2}, loopA)),
			node:       found{"/mnt/disks/vol0": identity.FileHandleOnDisk(1, []byte{2}, identity.Loop("/var/disks/b.img", 0, 0))},
			wantReason: ReasonMismatch},
		"UUID-less file system, a file system with a UUID found": {
			pv: localPV("pv-a", "/mnt/disks/vol0", identity.FileHandleOnDisk(1, []byte{2}, loopA)), node: found{"/mnt/disks/vol0": dirA},
			wantReason: ReasonMismatch},
		"weak identity different is refused": {
			pv: localPV("pv-a", "/dev/loop3", loopA), node: found{"/dev/loop3": identity.Loop("/var/disks/b.img", 0, 0)},
			wantReason: ReasonMismatch},
		"weak identity, another PV's disk found": {
			seen: []*v1.PersistentVolume{localPV("pv-b", "/mnt/disks/vol1", dirB)},
			pv:   localPV("pv-a", "/mnt/disks/vol0", fhA), node: found{"/mnt/disks/vol0": dirB},
			wantReason: ReasonMismatch, wantIn: []string{"the disk of PV pv-b"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c := New(ktesting.NewLogger(t, ktesting.NewConfig()), tc.node.read)
			for _, pv := range tc.seen {
				c.Observe(pv)
			}
			err := c.Check(tc.pv)
			var r *Refusal
			if tc.wantReason == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if !errors.As(err, &r) || r.Reason != tc.wantReason {
				t.Fatalf("error %v, want a refusal with reason %s", err, tc.wantReason)
			}
			msg := err.Error()
			for _, want := range tc.wantIn {
				if !strings.Contains(msg, want) {
					t.Errorf("message %q does not contain %q", msg, want)
				}
			}
			if strings.Contains(strings.ToLower(msg), "annotat") {
				t.Errorf("message %q suggests annotations", msg)
			}
		})
	}
}

// TestRefusalCountsByReason: each refusal adds one to the counter of its
// reason.
func TestRefusalCountsByReason(t *testing.T) {
	RegisterMetrics()
	before, err := testutil.GetCounterMetricValue(refusals.WithLabelValues(string(ReasonMismatch)))
	if err != nil {
		t.Fatal(err)
	}
	c := New(ktesting.NewLogger(t, ktesting.NewConfig()), found{"/mnt/disks/vol0": dirB}.read)
	if err := c.Check(localPV("pv-a", "/mnt/disks/vol0", dirA)); err == nil {
		t.Fatal("a swapped directory was not refused")
	}
	after, err := testutil.GetCounterMetricValue(refusals.WithLabelValues(string(ReasonMismatch)))
	if err != nil {
		t.Fatal(err)
	}
	if after != before+1 {
		t.Fatalf("refusals{reason=mismatch} went from %v to %v, want one more", before, after)
	}
}

// TestOwnerIndexIsBounded: the index of disks to PVs never grows past
// maxOwners.
func TestOwnerIndexIsBounded(t *testing.T) {
	c := New(ktesting.NewLogger(t, ktesting.NewConfig()), found{}.read)
	for i := range maxOwners + 10 {
		c.Observe(localPV("pv", "/p", identity.WWN("naa."+strconv.Itoa(i))))
	}
	if n := len(c.(*checker).owners); n > maxOwners {
		t.Fatalf("index holds %d disks, bound is %d", n, maxOwners)
	}
}

func TestMetricsConvention(t *testing.T) {
	metricstest.Check(t, metricsSubsystem, []string{"refusals_total"}, func() {
		refusals.WithLabelValues(string(ReasonUnreadable)).Add(0)
	}, refusals)
}
