package discovery

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"k8s.io/klog/v2/ktesting"

	"github.com/nodeplug/nodeplug/pkg/localpv/config"
	"github.com/nodeplug/nodeplug/pkg/localpv/identity"
	"github.com/nodeplug/nodeplug/pkg/localpv/report"
	"github.com/nodeplug/nodeplug/pkg/localpv/testutil"
)

func TestDiscover(t *testing.T) {
	testutil.RequireRoot(t)
	root, fsDir, blkDir, fsTypeDir := discoveryTree(t)
	classes := []ClassSpec{
		{Name: "fs", MountDir: fsDir, VolumeMode: "Filesystem", NamePattern: "vol*"},
		{Name: "blk", MountDir: blkDir, VolumeMode: "Block", NamePattern: "*", Devices: true},
		{Name: "fstype", MountDir: fsTypeDir, VolumeMode: "Filesystem", NamePattern: "*", Devices: true},
		{Name: "missing", MountDir: filepath.Join(root, "missing"), VolumeMode: "Filesystem", NamePattern: "*"},
	}
	_, ctx := ktesting.NewTestContext(t)
	held := []HeldPath{{Path: "/host/blk/disk1", Container: filepath.Join(blkDir, "disk1")}, {Path: "/elsewhere"}}
	r, err := NewDiscoverer(&Scanner{}, SelfMountInfo).Discover(ctx, "node-1", classes, held)
	if err != nil {
		t.Fatal(err)
	}
	checkIdentities(t, r)
	got := map[string]string{}
	for _, c := range r.Classes {
		if c.Error != "" {
			got[c.Name+"/"] = "error"
		}
		for _, v := range c.Volumes {
			got[c.Name+"/"+v.Name] = string(v.Kind) + ":" + itoa(v.Capacity)
		}
		for _, s := range c.Skipped {
			got[c.Name+"/"+s.Name] = s.Reason
		}
	}
	want := map[string]string{
		"fs/vol-a":          "d:" + itoa(4<<20),
		"fs/vol with space": "d:" + itoa(2<<20),
		"fs/vol-plain":      SkipNotMountPoint,
		"fs/vol-link":       SkipSymlink,
		"fs/vol-dev":        SkipSymlink,
		"fs/vol-file":       SkipUnsupported,
		"blk/disk1":         "b:" + itoa(8<<20),
		"blk/evil":          SkipNotBlockDevice,
		"blk/adir":          SkipDirectory,
		"fstype/disk2":      "b:" + itoa(8<<20),
		"missing/":          "error",
	}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("%s: got %q, want %q", k, got[k], w)
		}
	}
	if len(got) != len(want) {
		t.Errorf("unexpected entries: %v", got)
	}
	if r.Node != "node-1" || r.Version != report.Version {
		t.Errorf("bad header: %+v", r)
	}
}

// checkIdentities checks that every volume carries what it leads to: a
// directory its file system's identity, a block entry its loop device's
// identity and kernel name; and that the held paths are resolved the same
// way.
func checkIdentities(t *testing.T, r *report.Report) {
	t.Helper()
	dev := ""
	for _, c := range r.Classes {
		for _, v := range c.Volumes {
			if err := v.ID.Valid(); err != nil || v.ID == "" {
				t.Errorf("%s/%s: identity %q: %v", c.Name, v.Name, v.ID, err)
			}
			switch {
			case v.Kind == report.KindDirectory && v.Dev != "":
				t.Errorf("%s/%s: a directory with device %q", c.Name, v.Name, v.Dev)
			case v.Kind == report.KindBlock && (!strings.HasPrefix(v.Dev, "loop") || v.ID != identity.LoopDevice("/sys", v.Dev)):
				t.Errorf("%s/%s: device %q identity %q, want a loop device and its backing file", c.Name, v.Name, v.Dev, v.ID)
			case v.Kind == report.KindBlock:
				dev = v.Dev
			}
		}
	}
	if len(r.Held) != 2 || r.Held[0].Dev != dev || r.Held[0].ID == "" || r.Held[1].Error != ErrHeldNotVisible {
		t.Errorf("held %+v, want the loop device %s, then an invisible path", r.Held, dev)
	}
}

// discoveryTree builds class directories holding one entry of each kind.
func discoveryTree(t *testing.T) (root, fsDir, blkDir, fsTypeDir string) {
	t.Helper()
	root = t.TempDir()
	fsDir, blkDir, fsTypeDir = filepath.Join(root, "fs"), filepath.Join(root, "blk"), filepath.Join(root, "fstype")
	for _, d := range []string{fsDir, blkDir, fsTypeDir, filepath.Join(fsDir, "vol-plain"), filepath.Join(blkDir, "adir")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	testutil.MountTmpfs(t, filepath.Join(fsDir, "vol-a"), 4<<20)
	testutil.MountTmpfs(t, filepath.Join(fsDir, "vol with space"), 2<<20)
	dev := testutil.LoopDevice(t, 8<<20)
	mustSymlink(t, dev, filepath.Join(blkDir, "disk1"))
	mustSymlink(t, "/etc/hostname", filepath.Join(blkDir, "evil"))
	mustSymlink(t, "/etc", filepath.Join(fsDir, "vol-link"))
	mustSymlink(t, dev, filepath.Join(fsDir, "vol-dev"))
	mustSymlink(t, dev, filepath.Join(fsTypeDir, "disk2"))
	if err := os.WriteFile(filepath.Join(fsDir, "vol-file"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(fsDir, "other"), 0o755); err != nil {
		t.Fatal(err)
	}

	return root, fsDir, blkDir, fsTypeDir
}

func TestMountPointsUnescapes(t *testing.T) {
	f := filepath.Join(t.TempDir(), "mountinfo")
	line := `36 35 98:0 / /mnt/a\040b rw,noatime master:1 - ext3 /dev/root rw,errors=continue` + "\n"
	if err := os.WriteFile(f, []byte(line), 0o644); err != nil {
		t.Fatal(err)
	}
	mps, err := MountPoints(f)
	if err != nil {
		t.Fatal(err)
	}
	if !mps["/mnt/a b"] {
		t.Fatalf("escaped mount point not decoded: %v", mps)
	}
	if _, err := MountPoints(filepath.Join(t.TempDir(), "none")); err == nil {
		t.Fatal("missing mountinfo must fail")
	}
}

func mustSymlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

func TestDiscoverProbesForSelectors(t *testing.T) {
	plain := ClassSpec{Name: "fs", MountDir: "/mnt/fs"}
	ssd := ClassSpec{Name: "ssd", MountDir: "/dev/disk/by-id", DiskSelector: &config.DiskSelector{}}
	loops := ClassSpec{Name: "test", MountDir: "/mnt/links", DiskSelector: &config.DiskSelector{LoopDevices: true}}
	for _, tc := range []struct {
		name        string
		classes     []ClassSpec
		probe, loop bool
	}{
		{name: "no selector", classes: []ClassSpec{plain}},
		{name: "a selector", classes: []ClassSpec{plain, ssd}, probe: true},
		{name: "a selector of loop devices", classes: []ClassSpec{loops, ssd}, probe: true, loop: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			inv := (&discoverer{scanner: &Scanner{SysDir: "/s", DevDir: "/d"}}).inventory(tc.classes)
			if inv.Probe != tc.probe || inv.LoopDevices != tc.loop || inv.SysDir != "/s" || inv.DevDir != "/d" {
				t.Errorf("inventory %+v, want probe %v, loop devices %v", inv, tc.probe, tc.loop)
			}
		})
	}
}
