package prober

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestRescanDirsMatchesFullScan checks that re-reading only the driver
// directories that had events gives what a full scan gives, and that it
// asks for a full scan where it cannot be sure.
func TestRescanDirsMatchesFullScan(t *testing.T) {
	noReuse := func(string) (desiredDriver, bool) { return desiredDriver{}, false }
	tests := []struct {
		name   string
		change func(t *testing.T, root string)
		dirty  []string
		wantOK bool
	}{
		{name: "new driver", dirty: []string{"example.com~new"}, wantOK: true,
			change: func(t *testing.T, root string) { install(t, root, "example.com~new", "new", script(capsNoAttach)) }},
		{name: "updated driver", dirty: []string{"example.com~a"}, wantOK: true,
			change: func(t *testing.T, root string) { install(t, root, "example.com~a", "a", script(capsAttach)) }},
		{name: "removed driver", dirty: []string{"example.com~a"}, wantOK: true,
			change: func(t *testing.T, root string) { mustRemoveAll(t, filepath.Join(root, "example.com~a")) }},
		{name: "executable removed, directory kept", dirty: []string{"example.com~a"}, wantOK: true,
			change: func(t *testing.T, root string) { mustRemoveAll(t, filepath.Join(root, "example.com~a", "a")) }},
		{name: "invalid directory name", dirty: []string{"no-tilde"}, wantOK: true,
			change: func(t *testing.T, root string) { mustMkdir(t, filepath.Join(root, "no-tilde")) }},
		{name: "invalid directory name removed", dirty: []string{"bad"}, wantOK: true,
			change: func(t *testing.T, root string) { mustRemoveAll(t, filepath.Join(root, "bad")) }},
		{name: "plain file is not a driver", dirty: []string{"example.com~file"}, wantOK: true,
			change: func(t *testing.T, root string) {
				if err := os.WriteFile(filepath.Join(root, "example.com~file"), nil, 0o644); err != nil {
					t.Fatal(err)
				}
			}},
		{name: "symlink needs a full scan", dirty: []string{"example.com~link"}, wantOK: false,
			change: func(t *testing.T, root string) {
				target := t.TempDir()
				install(t, target, ".", "link", script(capsNoAttach))
				if err := os.Symlink(target, filepath.Join(root, "example.com~link")); err != nil {
					t.Fatal(err)
				}
			}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			install(t, root, "example.com~a", "a", script(capsNoAttach))
			install(t, root, "example.com~b", "b", script(capsNoAttach))
			mustMkdir(t, filepath.Join(root, "bad"))
			names := nameCache{}
			prev, err := scanDir(root, names, noReuse)
			if err != nil {
				t.Fatal(err)
			}
			prevDrivers := len(prev.drivers)
			tc.change(t, root)
			dirty := map[string]bool{}
			for _, d := range tc.dirty {
				dirty[d] = true
			}
			got, ok := rescanDirs(root, prev, dirty, names)
			if ok != tc.wantOK {
				t.Fatalf("rescanDirs ok = %v, want %v", ok, tc.wantOK)
			}
			if len(prev.drivers) != prevDrivers {
				t.Errorf("rescanDirs modified the previous result")
			}
			if !ok {
				return
			}
			want, err := scanDir(root, names, noReuse)
			if err != nil {
				t.Fatal(err)
			}
			opt := cmp.AllowUnexported(desiredDriver{}, fingerprint{})
			for _, c := range []struct {
				what      string
				got, want any
			}{{"drivers", got.drivers, want.drivers}, {"problems", got.problems, want.problems}} {
				if diff := cmp.Diff(c.want, c.got, opt); diff != "" {
					t.Errorf("%s differ from a full scan (-full +rescan):\n%s", c.what, diff)
				}
			}
		})
	}
}

func mustMkdir(t *testing.T, dir string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
}

func mustRemoveAll(t *testing.T, path string) {
	t.Helper()
	if err := os.RemoveAll(path); err != nil {
		t.Fatal(err)
	}
}
