package validation

import (
	"strings"
	"testing"

	"github.com/nodeplug/nodeplug/pkg/localpv/config"
	"github.com/nodeplug/nodeplug/pkg/localpv/report"
)

func testConfig(t *testing.T) *config.Configuration {
	t.Helper()
	cfg, _, err := config.Parse(map[string]string{config.KeyStorageClassMap: `
fs:
  hostDir: /mnt/fs
  namePattern: "vol*"
blk:
  hostDir: /mnt/blk
  volumeMode: Block
  blockCleanerCommand: [wipefs]
ssd:
  volumeMode: Block
  blockCleanerCommand: [wipefs]
  diskSelector: {rotational: false}
`})
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func TestCheckVolumes(t *testing.T) {
	cfg := testConfig(t)
	tests := []struct {
		name       string
		class      string
		vol        report.Volume
		wantReason string
		wantPath   string
	}{
		{name: "filesystem volume accepted", class: "fs", vol: report.Volume{Name: "vol1", Kind: "d", Capacity: 1}, wantPath: "/mnt/fs/vol1"},
		{name: "block volume accepted", class: "blk", vol: report.Volume{Name: "sdb", Kind: "b", Capacity: 1}, wantPath: "/mnt/blk/sdb"},
		{name: "unknown class", class: "other", vol: report.Volume{Name: "vol1", Kind: "d", Capacity: 1}, wantReason: ReasonUnknownClass},
		{name: "dot dot", class: "fs", vol: report.Volume{Name: "..", Kind: "d", Capacity: 1}, wantReason: ReasonInvalidName},
		{name: "dot", class: "fs", vol: report.Volume{Name: ".", Kind: "d", Capacity: 1}, wantReason: ReasonInvalidName},
		{name: "traversal", class: "fs", vol: report.Volume{Name: "../../etc", Kind: "d", Capacity: 1}, wantReason: ReasonInvalidName},
		{name: "nested path", class: "fs", vol: report.Volume{Name: "vol1/sub", Kind: "d", Capacity: 1}, wantReason: ReasonInvalidName},
		{name: "empty name", class: "fs", vol: report.Volume{Name: "", Kind: "d", Capacity: 1}, wantReason: ReasonInvalidName},
		{name: "control character", class: "fs", vol: report.Volume{Name: "vol\n1", Kind: "d", Capacity: 1}, wantReason: ReasonInvalidName},
		{name: "not utf8", class: "fs", vol: report.Volume{Name: "vol\xff", Kind: "d", Capacity: 1}, wantReason: ReasonInvalidName},
		{name: "too long", class: "fs", vol: report.Volume{Name: "vol" + strings.Repeat("x", 300), Kind: "d", Capacity: 1}, wantReason: ReasonInvalidName},
		{name: "pattern mismatch", class: "fs", vol: report.Volume{Name: "disk1", Kind: "d", Capacity: 1}, wantReason: ReasonPatternMismatch},
		{name: "device in filesystem class without fsType", class: "fs", vol: report.Volume{Name: "vol1", Kind: "b", Capacity: 1}, wantReason: ReasonWrongKind},
		{name: "directory in block class", class: "blk", vol: report.Volume{Name: "sdb", Kind: "d", Capacity: 1}, wantReason: ReasonWrongKind},
		{name: "unknown kind", class: "blk", vol: report.Volume{Name: "sdb", Kind: "x", Capacity: 1}, wantReason: ReasonWrongKind},
		{name: "zero capacity", class: "fs", vol: report.Volume{Name: "vol1", Kind: "d", Capacity: 0}, wantReason: ReasonInvalidCapacity},
		{name: "negative capacity", class: "fs", vol: report.Volume{Name: "vol1", Kind: "d", Capacity: -5}, wantReason: ReasonInvalidCapacity},
		{name: "selected disk accepted", class: "ssd", vol: report.Volume{Name: "wwn-0x1", Kind: "b", Capacity: 1,
			Disk: &report.Disk{Name: "sda", Size: 1}}, wantPath: "/dev/disk/by-id/wwn-0x1"},
		{name: "selected disk without properties", class: "ssd", vol: report.Volume{Name: "wwn-0x1", Kind: "b", Capacity: 1},
			wantReason: ReasonDiskProperties},
		{name: "selected disk not matching", class: "ssd", vol: report.Volume{Name: "wwn-0x1", Kind: "b", Capacity: 1,
			Disk: &report.Disk{Name: "sda", Size: 1, Rotational: true}}, wantReason: ReasonDiskProperties},
		{name: "selected disk size differs", class: "ssd", vol: report.Volume{Name: "wwn-0x1", Kind: "b", Capacity: 2,
			Disk: &report.Disk{Name: "sda", Size: 1}}, wantReason: ReasonDiskProperties},
		{name: "disk properties in a directory class", class: "blk", vol: report.Volume{Name: "sdb", Kind: "b", Capacity: 1,
			Disk: &report.Disk{Name: "sdb", Size: 1}}, wantReason: ReasonDiskProperties},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := &report.Report{Version: 1, Node: "n1", Classes: []report.Class{{Name: tc.class, Volumes: []report.Volume{tc.vol}}}}
			res, err := Check(cfg, "n1", "n1", r)
			if err != nil {
				t.Fatal(err)
			}
			if tc.wantReason == "" {
				if len(res.Accepted) != 1 || res.Accepted[0].HostPath != tc.wantPath || len(res.Rejected) != 0 {
					t.Fatalf("want accepted %s, got %+v", tc.wantPath, res)
				}
				return
			}
			if len(res.Accepted) != 0 || len(res.Rejected) != 1 || res.Rejected[0].Reason != tc.wantReason {
				t.Fatalf("want rejection %s, got %+v", tc.wantReason, res)
			}
		})
	}
}

func TestCheckReportLevel(t *testing.T) {
	cfg := testConfig(t)
	vol := report.Volume{Name: "vol1", Kind: "d", Capacity: 1}
	tests := []struct {
		name    string
		jobNode string
		podNode string
		report  report.Report
		wantErr string
	}{
		{name: "report for another node", jobNode: "n1", podNode: "n1", report: report.Report{Node: "n2"}, wantErr: `report is for node "n2"`},
		{name: "pod ran elsewhere", jobNode: "n1", podNode: "n2", report: report.Report{Node: "n1"}, wantErr: `pod ran on node "n2"`},
		{name: "class twice", jobNode: "n1", podNode: "n1", report: report.Report{Node: "n1", Classes: []report.Class{{Name: "fs"}, {Name: "fs"}}}, wantErr: "twice"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Check(cfg, tc.jobNode, tc.podNode, &tc.report)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("want %q, got %v", tc.wantErr, err)
			}
		})
	}
	res, err := Check(cfg, "n1", "n1", &report.Report{Node: "n1", Classes: []report.Class{
		{Name: "fs", Volumes: []report.Volume{vol, vol}},
		{Name: "blk", Error: "permission denied"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Accepted) != 1 || len(res.Rejected) != 1 || res.Rejected[0].Reason != ReasonDuplicate {
		t.Fatalf("duplicate not rejected: %+v", res)
	}
	if !res.Complete["fs"] || res.Complete["blk"] {
		t.Fatalf("complete classes wrong: %v", res.Complete)
	}
}
