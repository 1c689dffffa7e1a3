//go:build linux

package discovery

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/nodeplug/nodeplug/pkg/localpv/identity"
	"github.com/nodeplug/nodeplug/pkg/localpv/report"
	"github.com/nodeplug/nodeplug/pkg/localpv/testutil"
)

// TestResolveHeld resolves the paths of other PVs of the node: a directory,
// a link to a real loop device, the device itself, and paths it cannot
// resolve.
func TestResolveHeld(t *testing.T) {
	testutil.RequireRoot(t)
	dev := testutil.LoopDevice(t, 8<<20)
	backing := identity.LoopDevice("/sys", filepath.Base(dev))
	if backing == "" {
		t.Fatalf("loop device %s has no backing file", dev)
	}
	dir := t.TempDir()
	vol := filepath.Join(dir, "vol-1")
	if err := os.Mkdir(vol, 0o755); err != nil {
		t.Fatal(err)
	}
	dirID, err := identity.Directory(vol)
	if err != nil {
		t.Fatal(err)
	}
	dirDev := blockDeviceOf(t, vol)
	mustSymlink(t, dev, filepath.Join(dir, "disk-1"))
	mustSymlink(t, "/etc/hostname", filepath.Join(dir, "evil"))
	if err := os.WriteFile(filepath.Join(dir, "file"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	held := []HeldPath{
		{Path: "/mnt/fast/vol-1", Container: vol},
		{Path: "/mnt/blk/disk-1", Container: filepath.Join(dir, "disk-1")},
		{Path: dev, Container: dev},
		{Path: "/mnt/blk/gone", Container: filepath.Join(dir, "gone")},
		{Path: "/var/lib/other/pv", Container: ""},
		{Path: "/mnt/blk/evil", Container: filepath.Join(dir, "evil")},
		{Path: "/mnt/blk/file", Container: filepath.Join(dir, "file")},
	}
	got := (&Scanner{}).ResolveHeld(held)
	want := []report.Held{
		{Path: "/mnt/fast/vol-1", Kind: report.KindDirectory, Dev: dirDev, ID: dirID},
		{Path: "/mnt/blk/disk-1", Kind: report.KindBlock, Dev: filepath.Base(dev), ID: backing},
		{Path: dev, Kind: report.KindBlock, Dev: filepath.Base(dev), ID: backing},
		{Path: "/mnt/blk/gone", Error: "no such file or directory"},
		{Path: "/var/lib/other/pv", Error: ErrHeldNotVisible},
		{Path: "/mnt/blk/evil", Error: "outside /dev"},
		{Path: "/mnt/blk/file", Error: "neither a directory nor a block device"},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d results, want %d: %+v", len(got), len(want), got)
	}
	for i, w := range want {
		g := got[i]
		if g.Path != w.Path || g.Dev != w.Dev || g.ID != w.ID || (w.Kind != "" && g.Kind != w.Kind) || !strings.Contains(g.Error, w.Error) || (w.Error == "") != (g.Error == "") {
			t.Errorf("held %s: got %+v, want %+v", w.Path, g, w)
		}
	}
	var many []HeldPath
	for i := range report.MaxHeld + 5 {
		many = append(many, HeldPath{Path: "/p/" + strconv.Itoa(i)})
	}
	if n := len((&Scanner{}).ResolveHeld(many)); n != report.MaxHeld {
		t.Errorf("%d held paths resolved, want at most %d", n, report.MaxHeld)
	}
}

// blockDeviceOf returns the kernel name of the block device that the file
// system of p lives on, or "" when its device number is no block device's.
func blockDeviceOf(t *testing.T, p string) string {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Stat(p, &st); err != nil {
		t.Fatal(err)
	}
	target, err := os.Readlink(fmt.Sprintf("/sys/dev/block/%d:%d", unix.Major(st.Dev), unix.Minor(st.Dev)))
	if err != nil {
		return ""
	}
	return filepath.Base(target)
}
