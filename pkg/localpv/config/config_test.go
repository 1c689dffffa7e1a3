package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/nodeplug/nodeplug/pkg/localpv/report"
)

const fastClass = `
fast-disks:
  hostDir: /mnt/fast-disks
  mountDir: /mnt/fast
  namePattern: "nvme*, ssd*"
`

func TestParseValid(t *testing.T) {
	cfg, warnings, err := Parse(map[string]string{
		KeyStorageClassMap: fastClass + `
block-disks:
  hostDir: /mnt/block
  volumeMode: Block
  blockCleanerCommand: ["blkdiscard", "$(LOCAL_PV_BLKDEVICE)"]
  selector:
  - matchExpressions: [{key: zone, operator: In, values: [a]}]
`,
		KeyNodeSelector:                   "nodeSelectorTerms:\n- matchExpressions: [{key: disks, operator: Exists}]\n",
		KeyJobTolerations:                 "- {key: dedicated, operator: Equal, value: storage, effect: NoSchedule}\n",
		KeyDeleteUnboundPVsOfDeletedNodes: "true\n",
		KeyNodeLabelsForPV:                "[topology.kubernetes.io/zone]",
		KeyLabelsForPV:                    "{team: storage}",
		"useNodeNameOnly":                 "true",
	})
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	if len(warnings) != 1 || !strings.Contains(warnings[0], "useNodeNameOnly") {
		t.Errorf("warnings = %q", warnings)
	}
	fast := cfg.StorageClassMap["fast-disks"]
	if fast.VolumeMode != VolumeModeFilesystem || fast.AccessMode != "ReadWriteOnce" || fast.MountDir != "/mnt/fast" {
		t.Errorf("defaults not applied: %+v", fast)
	}
	blk := cfg.StorageClassMap["block-disks"]
	if blk.MountDir != "/mnt/block" || blk.NamePattern != "*" || !blk.AcceptsDevices() {
		t.Errorf("block defaults not applied: %+v", blk)
	}
	if !cfg.DeleteUnboundPVsOfDeletedNodes || !cfg.UseDaemonSetTolerations || len(cfg.JobTolerations) != 1 {
		t.Errorf("flags not parsed: %+v", cfg)
	}
	with := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "a", Labels: map[string]string{"disks": ""}}}
	without := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "b"}}
	if !cfg.NodeMatches(with) || cfg.NodeMatches(without) {
		t.Errorf("node selector does not select correctly")
	}
	if !MatchName(fast.NamePattern, "ssd1") || MatchName(fast.NamePattern, "hdd1") {
		t.Errorf("name pattern does not match correctly")
	}
}

func TestParseRejects(t *testing.T) {
	tests := []struct {
		name    string
		data    map[string]string
		wantErr string
	}{
		{name: "no classes", data: map[string]string{}, wantErr: "storageClassMap: Required value"},
		{name: "unknown key", data: map[string]string{"storageClasMap": fastClass}, wantErr: `unknown configuration key "storageClasMap"`},
		{name: "unknown class field", data: map[string]string{KeyStorageClassMap: "a:\n  hostDir: /mnt/a\n  hostPath: /x\n"}, wantErr: "unknown field"},
		{name: "malformed yaml", data: map[string]string{KeyStorageClassMap: "a: ["}, wantErr: `failed to parse configuration key "storageClassMap"`},
		{name: "missing hostDir", data: classMap("a:\n  mountDir: /mnt/a\n"), wantErr: "storageClassMap[a].hostDir: Required value"},
		{name: "relative hostDir", data: classMap("a:\n  hostDir: mnt/a\n"), wantErr: "must be an absolute path"},
		{name: "unclean hostDir", data: classMap("a:\n  hostDir: /mnt/../a\n"), wantErr: "must be a clean path (/a)"},
		{name: "root hostDir", data: classMap("a:\n  hostDir: /\n"), wantErr: "must not be the root directory"},
		{name: "hostDir under /dev", data: classMap("a:\n  hostDir: /dev/disks\n"), wantErr: "system directory /dev"},
		{name: "mountDir over /etc", data: classMap("a:\n  hostDir: /mnt/a\n  mountDir: /etc\n"), wantErr: "storageClassMap[a].mountDir"},
		{name: "bad class name", data: classMap("Fast_Disks:\n  hostDir: /mnt/a\n"), wantErr: "storage class name"},
		{name: "unknown volume mode", data: classMap("a:\n  hostDir: /mnt/a\n  volumeMode: Raw\n"), wantErr: `volumeMode: Unsupported value: "Raw"`},
		{name: "block without cleaner", data: classMap("a:\n  hostDir: /mnt/a\n  volumeMode: Block\n"), wantErr: "blockCleanerCommand: Required value"},
		{name: "fsType without cleaner", data: classMap("a:\n  hostDir: /mnt/a\n  fsType: ext4\n"), wantErr: "blockCleanerCommand: Required value"},
		{name: "fsType on block class", data: classMap("a:\n  hostDir: /mnt/a\n  volumeMode: Block\n  fsType: ext4\n  blockCleanerCommand: [wipefs]\n"), wantErr: "fsType: Forbidden"},
		{name: "bad fsType", data: classMap("a:\n  hostDir: /mnt/a\n  fsType: 'ext4;rm'\n  blockCleanerCommand: [wipefs]\n"), wantErr: "must be a filesystem name"},
		{name: "relative cleaner path", data: classMap("a:\n  hostDir: /mnt/a\n  volumeMode: Block\n  blockCleanerCommand: [scripts/x.sh]\n"), wantErr: "absolute path or a bare command"},
		{name: "empty cleaner argument", data: classMap("a:\n  hostDir: /mnt/a\n  volumeMode: Block\n  blockCleanerCommand: [wipefs, '']\n"), wantErr: "blockCleanerCommand[1]"},
		{name: "bad glob", data: classMap("a:\n  hostDir: /mnt/a\n  namePattern: 'disk['\n"), wantErr: "syntax error in pattern"},
		{name: "glob with slash", data: classMap("a:\n  hostDir: /mnt/a\n  namePattern: 'x/*'\n"), wantErr: "must not contain '/'"},
		{name: "empty glob list", data: classMap("a:\n  hostDir: /mnt/a\n  namePattern: ' , '\n"), wantErr: "at least one glob"},
		{name: "bad selector operator", data: classMap("a:\n  hostDir: /mnt/a\n  selector:\n  - matchExpressions: [{key: z, operator: Near}]\n"), wantErr: "storageClassMap[a].selector"},
		{name: "bad access mode", data: classMap("a:\n  hostDir: /mnt/a\n  accessMode: ReadWriteSometimes\n"), wantErr: "accessMode: Unsupported value"},
		{name: "equal hostDirs", data: classMap("a:\n  hostDir: /mnt/a\n  mountDir: /m/a\nb:\n  hostDir: /mnt/a\n  mountDir: /m/b\n"), wantErr: "overlaps hostDir /mnt/a of class a"},
		{name: "nested hostDirs", data: classMap("a:\n  hostDir: /mnt/a\n  mountDir: /m/a\nb:\n  hostDir: /mnt/a/b\n  mountDir: /m/b\n"), wantErr: "overlaps hostDir"},
		{name: "nested mountDirs", data: classMap("a:\n  hostDir: /mnt/a\n  mountDir: /m\nb:\n  hostDir: /mnt/b\n  mountDir: /m/b\n"), wantErr: "overlaps mountDir /m of class a"},
		{name: "bad node selector", data: withClass(KeyNodeSelector, "nodeSelectorTerms:\n- matchExpressions: [{key: '', operator: In, values: [x]}]\n"), wantErr: "nodeSelector"},
		{name: "toleration Exists with value", data: withClass(KeyJobTolerations, "- {key: a, operator: Exists, value: b}\n"), wantErr: "jobTolerations[0].value"},
		{name: "toleration bad effect", data: withClass(KeyJobTolerations, "- {key: a, operator: Exists, effect: Sometimes}\n"), wantErr: "jobTolerations[0].effect: Unsupported value"},
		{name: "toleration empty key with Equal", data: withClass(KeyJobTolerations, "- {operator: Equal, value: b}\n"), wantErr: "must be Exists when key is empty"},
		{name: "toleration seconds without NoExecute", data: withClass(KeyJobTolerations, "- {key: a, operator: Exists, effect: NoSchedule, tolerationSeconds: 5}\n"), wantErr: "must be NoExecute"},
		{name: "bad bool", data: withClass(KeyDeleteUnboundPVsOfDeletedNodes, "sometimes"), wantErr: `"deleteUnboundPVsOfDeletedNodes"`},
		{name: "bad node label key", data: withClass(KeyNodeLabelsForPV, "['bad key']"), wantErr: "nodeLabelsForPV[0]"},
		{name: "bad static label", data: withClass(KeyLabelsForPV, "{'a b': c}"), wantErr: "labelsForPV"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := Parse(tc.data)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("want error containing %q, got %v", tc.wantErr, err)
			}
		})
	}
}

func TestLoadDir(t *testing.T) {
	dir := t.TempDir()
	// Mimic the kubelet's ConfigMap layout: ..data symlink and a timestamped dir.
	data := filepath.Join(dir, "..2026_01_01")
	if err := os.Mkdir(data, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(data, KeyStorageClassMap), []byte(fastClass), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Base(data), filepath.Join(dir, "..data")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join("..data", KeyStorageClassMap), filepath.Join(dir, KeyStorageClassMap)); err != nil {
		t.Fatal(err)
	}
	cfg, _, err := LoadDir(dir)
	if err != nil {
		t.Fatalf("LoadDir: %v", err)
	}
	if _, ok := cfg.StorageClassMap["fast-disks"]; !ok {
		t.Fatalf("class not loaded: %+v", cfg)
	}
	if _, _, err := LoadDir(filepath.Join(dir, "missing")); err == nil {
		t.Fatalf("missing directory must fail")
	}
}

func classMap(s string) map[string]string { return map[string]string{KeyStorageClassMap: s} }

func withClass(key, value string) map[string]string {
	return map[string]string{KeyStorageClassMap: fastClass, key: value}
}

func TestParseDiskSelector(t *testing.T) {
	cfg, _, err := Parse(map[string]string{KeyStorageClassMap: `
fast:
  volumeMode: Block
  blockCleanerCommand: ["/scripts/quick_reset.sh"]
  diskSelector: {rotational: false, minSize: 100Gi, maxSize: 4Ti, models: ["Samsung SSD*"], vendors: ["ATA", "NVMe"]}
slow:
  fsType: ext4
  blockCleanerCommand: ["/scripts/quick_reset.sh"]
  diskSelector: {rotational: true}
`})
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	fast := cfg.StorageClassMap["fast"]
	if fast.HostDir != DefaultLinkDir || fast.MountDir != DefaultLinkDir || !fast.InDev() {
		t.Errorf("link directory not defaulted: %+v", fast)
	}
	if fast.DiskSelector.MinSize.Value() != 100<<30 || *fast.DiskSelector.Rotational {
		t.Errorf("selector not parsed: %+v", fast.DiskSelector)
	}
}

func TestParseDiskSelectorInvalid(t *testing.T) {
	tests := []struct {
		name  string
		class string
		want  string
	}{
		{name: "filesystem without fsType", class: "diskSelector: {}",
			want: "storageClassMap[c].volumeMode: Invalid value: \"Filesystem\": a class with a diskSelector publishes whole disks"},
		{name: "min above max", class: "volumeMode: Block\n  diskSelector: {minSize: 2Ti, maxSize: 1Ti}",
			want: "storageClassMap[c].diskSelector.maxSize: Invalid value: \"1Ti\": must not be smaller than minSize 2Ti"},
		{name: "zero size", class: "volumeMode: Block\n  diskSelector: {minSize: \"0\"}",
			want: "storageClassMap[c].diskSelector.minSize: Invalid value: \"0\": must be positive"},
		{name: "bad size", class: "volumeMode: Block\n  diskSelector: {minSize: 100GB!}",
			want: "failed to parse configuration key \"storageClassMap\""},
		{name: "bad glob", class: "volumeMode: Block\n  diskSelector: {models: [\"[Samsung\"]}",
			want: "storageClassMap[c].diskSelector.models[0]: Invalid value: \"[Samsung\": bad glob"},
		{name: "unknown field", class: "volumeMode: Block\n  diskSelector: {rotating: false}",
			want: "unknown field \"rotating\""},
		{name: "link dir elsewhere in dev", class: "volumeMode: Block\n  hostDir: /dev/mapper\n  diskSelector: {}",
			want: "storageClassMap[c].hostDir: Invalid value: \"/dev/mapper\": must not overlap the system directory /dev"},
		{name: "link dir mounted elsewhere", class: "volumeMode: Block\n  mountDir: /links\n  diskSelector: {}",
			want: "storageClassMap[c].mountDir: Invalid value: \"/links\": must equal hostDir /dev/disk/by-id"},
		{name: "link dir root", class: "volumeMode: Block\n  hostDir: /dev/disk\n  diskSelector: {}",
			want: "storageClassMap[c].hostDir: Invalid value: \"/dev/disk\": must be a clean directory below /dev/disk"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := Parse(map[string]string{KeyStorageClassMap: "c:\n  blockCleanerCommand: [blkdiscard]\n  " + tc.class + "\n"})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

func TestDiskSelectorMatches(t *testing.T) {
	ssd := report.Disk{Name: "sda", Size: 500 << 30, Model: "Samsung SSD 860", Vendor: "ATA", Signature: report.SignatureNone}
	hdd := report.Disk{Name: "sdb", Size: 4 << 40, Rotational: true, Model: "ST4000NM0035-1V4", Vendor: "ATA", Signature: "ext4"}
	tests := []struct {
		name     string
		selector string
		want     []bool
	}{
		{name: "empty selects all", selector: "{}", want: []bool{true, true}},
		{name: "non-rotational", selector: "{rotational: false}", want: []bool{true, false}},
		{name: "rotational", selector: "{rotational: true}", want: []bool{false, true}},
		{name: "min size", selector: "{minSize: 1Ti}", want: []bool{false, true}},
		{name: "max size", selector: "{maxSize: 500Gi}", want: []bool{true, false}},
		{name: "model glob", selector: "{models: [\"Samsung*\", \"WDC*\"]}", want: []bool{true, false}},
		{name: "vendor", selector: "{vendors: [ATA]}", want: []bool{true, true}},
		{name: "all must match", selector: "{vendors: [ATA], rotational: true, maxSize: 1Ti}", want: []bool{false, false}},
	}
	loop := report.Disk{Name: "loop3", Size: 1 << 30}
	for _, tc := range []struct {
		name     string
		disk     report.Disk
		selector DiskSelector
		want     bool
	}{
		{name: "loop device", disk: loop, want: false},
		{name: "loop device with loopDevices", disk: loop, selector: DiskSelector{LoopDevices: true}, want: true},
		{name: "device-mapper", disk: report.Disk{Name: "dm-0"}, selector: DiskSelector{LoopDevices: true}, want: false},
		{name: "md array", disk: report.Disk{Name: "md127"}, want: false},
		{name: "optical drive", disk: report.Disk{Name: "sr0"}, want: false},
		{name: "zram", disk: report.Disk{Name: "zram0"}, want: false},
		{name: "stacked", disk: report.Disk{Name: "vdc", Stacked: true}, want: false},
		{name: "virtio disk", disk: report.Disk{Name: "vdc"}, want: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.selector.Matches(&tc.disk); got != tc.want {
				t.Errorf("Matches(%s) = %v, want %v", tc.disk.Name, got, tc.want)
			}
		})
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var s DiskSelector
			if err := yaml.UnmarshalStrict([]byte(tc.selector), &s); err != nil {
				t.Fatal(err)
			}
			for i, d := range []report.Disk{ssd, hdd} {
				if got := s.Matches(&d); got != tc.want[i] {
					t.Errorf("%s: got %v, want %v", d.Name, got, tc.want[i])
				}
			}
		})
	}
}

func TestDiskSelectorSkip(t *testing.T) {
	tests := []struct {
		name   string
		disk   report.Disk
		accept bool
		want   string
	}{
		{name: "unused", disk: report.Disk{Signature: report.SignatureNone}, want: ""},
		{name: "file system", disk: report.Disk{Signature: "ext4"}, want: SkipSignature},
		{name: "file system accepted", disk: report.Disk{Signature: "ext4"}, accept: true, want: ""},
		{name: "partition table", disk: report.Disk{Signature: "gpt", Partitions: 2}, accept: true, want: SkipPartitioned},
		{name: "held by dm", disk: report.Disk{Signature: report.SignatureNone, Holders: 1}, want: SkipHeld},
		{name: "unreadable", disk: report.Disk{Signature: report.SignatureUnknown}, want: SkipSignatureUnknown},
		{name: "read-only", disk: report.Disk{Signature: report.SignatureNone, ReadOnly: true}, want: SkipReadOnly},
		{name: "in use", disk: report.Disk{Signature: report.SignatureNone, Busy: true}, want: SkipInUse},
		{name: "mounted whole-disk file system, signatures accepted", disk: report.Disk{Signature: "ext4", Busy: true}, accept: true, want: SkipInUse},
		{name: "unreadable, signatures accepted", disk: report.Disk{Signature: report.SignatureUnknown}, accept: true, want: SkipSignatureUnknown},
		{name: "not probed", disk: report.Disk{}, accept: true, want: SkipSignatureUnknown},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := DiskSelector{AcceptSignatures: tc.accept}
			if got := s.Skip(&tc.disk); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}
