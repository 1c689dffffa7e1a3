package wipe

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/klog/v2/ktesting"
)

func TestFSClean(t *testing.T) {
	tests := []struct {
		name string
		// dir returns LOCAL_PV_FILESYSTEM, given the volume directory.
		dir func(vol string) string
		// mountedBelow adds a mount point below the volume to the mount table.
		mountedBelow bool
		wantErr      string
	}{
		{name: "removes every entry and keeps the directory", dir: same},
		{name: "relative path", dir: func(string) string { return "vol" }, wantErr: `refusing to clean "vol": not a clean absolute path`},
		{name: "unclean path", dir: func(v string) string { return v + "/../vol" }, wantErr: "not a clean absolute path"},
		{name: "root directory", dir: func(string) string { return "/" }, wantErr: "refusing to clean the root directory"},
		{name: "missing directory", dir: func(v string) string { return v + "-gone" }, wantErr: "failed to stat"},
		{name: "a file", dir: func(v string) string { return filepath.Join(v, "file") }, wantErr: "not a directory"},
		{name: "a symlink to a directory", dir: func(v string) string { return v + "-link" }, wantErr: "not a directory (mode L"},
		{name: "a filesystem mounted below", dir: same, mountedBelow: true, wantErr: "sub is mounted below it"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			base := t.TempDir()
			vol, outside := filepath.Join(base, "vol"), filepath.Join(base, "outside")
			populate(t, vol, outside)
			if err := os.Symlink(vol, vol+"-link"); err != nil {
				t.Fatal(err)
			}
			mountInfo := fakeMountInfo(t, base, vol, tc.mountedBelow)
			r := &runner{getenv: mapEnv(map[string]string{FilesystemVariable: tc.dir(vol)}), mountInfo: mountInfo}
			var stderr bytes.Buffer
			checkExit(t, r.main(ctx, FSClean, nil, &stderr), stderr.String(), tc.wantErr)
			wantEntries := 0
			if tc.wantErr != "" {
				wantEntries = 4 // a refused clean removes nothing
			}
			if entries, err := os.ReadDir(vol); err != nil || len(entries) != wantEntries {
				t.Errorf("volume holds %v (%v), want %d entries", entries, err, wantEntries)
			}
			if b, err := os.ReadFile(filepath.Join(outside, "keep")); err != nil || string(b) != "keep" {
				t.Errorf("a file outside the volume was touched: %q, %v", b, err)
			}
		})
	}
}

func same(v string) string { return v }

// populate fills vol with a file, a nested tree, a hidden file and a
// symlink to a file outside it.
func populate(t *testing.T, vol, outside string) {
	t.Helper()
	for _, d := range []string{filepath.Join(vol, "sub", "deep"), outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	files := map[string]string{filepath.Join(vol, "file"): "data", filepath.Join(vol, ".hidden"): "data",
		filepath.Join(vol, "sub", "deep", "f"): "data", filepath.Join(outside, "keep"): "keep"}
	for p, c := range files {
		if err := os.WriteFile(p, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(filepath.Join(outside, "keep"), filepath.Join(vol, "escape")); err != nil {
		t.Fatal(err)
	}
}

// fakeMountInfo writes a mount table with base mounted, and a mount on
// vol/sub when mountedBelow.
func fakeMountInfo(t *testing.T, base, vol string, mountedBelow bool) string {
	t.Helper()
	lines := []string{fmt.Sprintf("36 1 8:1 / %s rw,relatime shared:1 - ext4 /dev/sda1 rw", base)}
	if mountedBelow {
		lines = append(lines, fmt.Sprintf("37 36 8:2 / %s rw,relatime shared:2 - ext4 /dev/sda2 rw", filepath.Join(vol, "sub")))
	}
	p := filepath.Join(t.TempDir(), "mountinfo")
	if err := os.WriteFile(p, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}
