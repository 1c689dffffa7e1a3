package installer

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func writeSource(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "src")
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func spec(t *testing.T, name, content string) DriverSpec {
	t.Helper()
	s, err := ParseDriverSpec(name + "=" + writeSource(t, content))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// entries lists a directory, hidden names included.
func entries(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}

func TestInstallNewDriver(t *testing.T) {
	dir := t.TempDir()
	in, err := Install(dir, spec(t, "example.com/nfs", "v1"), 0o750)
	if err != nil {
		t.Fatal(err)
	}
	if in.Path != filepath.Join(dir, "example.com~nfs", "nfs") {
		t.Errorf("path %s", in.Path)
	}
	b, _ := os.ReadFile(in.Path)
	fi, _ := os.Stat(in.Path)
	if string(b) != "v1" || fi.Mode().Perm() != 0o750 {
		t.Errorf("content %q mode %v", b, fi.Mode())
	}
	// No staging directory or temp file is left behind.
	if got := entries(t, dir); len(got) != 1 || got[0] != "example.com~nfs" {
		t.Errorf("plugin dir holds %v", got)
	}
	if got := entries(t, in.Dir); len(got) != 1 {
		t.Errorf("driver dir holds %v", got)
	}
}

func TestInstallUpdateReplacesInode(t *testing.T) {
	dir := t.TempDir()
	v1, err := Install(dir, spec(t, "example.com/nfs", "v1"), 0o755)
	if err != nil {
		t.Fatal(err)
	}
	held, err := os.Open(v1.Path) // a driver call in progress
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	v2, err := Install(dir, spec(t, "example.com/nfs", "v2"), 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if os.SameFile(v1.file, v2.file) {
		t.Error("update rewrote the file in place")
	}
	old := make([]byte, 2)
	if _, err := held.Read(old); err != nil || string(old) != "v1" {
		t.Errorf("running call sees %q, %v", old, err)
	}
	if b, _ := os.ReadFile(v2.Path); string(b) != "v2" {
		t.Errorf("content %q", b)
	}
	if got := entries(t, v2.Dir); len(got) != 1 {
		t.Errorf("temp files left: %v", got)
	}
}

func TestRemoveOnlyOwnVersion(t *testing.T) {
	dir := t.TempDir()
	old, err := Install(dir, spec(t, "example.com/nfs", "old"), 0o755)
	if err != nil {
		t.Fatal(err)
	}
	// A surge rollout: the new pod installs before the old one stops.
	cur, err := Install(dir, spec(t, "example.com/nfs", "new"), 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if removed, err := old.Remove(); err != nil || removed {
		t.Fatalf("old installer removed the new version: %v, %v", removed, err)
	}
	if removed, err := cur.Remove(); err != nil || !removed {
		t.Fatalf("Remove = %v, %v", removed, err)
	}
	if _, err := os.Stat(cur.Dir); !os.IsNotExist(err) {
		t.Errorf("empty driver dir left: %v", err)
	}
}

func TestInstallFailureLeavesNothing(t *testing.T) {
	dir := t.TempDir()
	s := spec(t, "example.com/nfs", "v1")
	s.Source = filepath.Join(t.TempDir(), "vanished")
	if _, err := Install(dir, s, 0o755); err == nil || !strings.Contains(err.Error(), "installing example.com/nfs") {
		t.Fatalf("got %v", err)
	}
	if got := entries(t, dir); len(got) != 0 {
		t.Errorf("left behind: %v", got)
	}
}

func TestCheck(t *testing.T) {
	cases := []struct {
		name    string
		change  func(t *testing.T, in *Installed)
		wantErr string
	}{
		{name: "installed", change: func(*testing.T, *Installed) {}},
		{name: "replaced by a newer installer", change: func(t *testing.T, in *Installed) {
			if _, err := Install(filepath.Dir(in.Dir), spec(t, "example.com/nfs", "v2"), 0o755); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "removed", wantErr: "no such file", change: func(t *testing.T, in *Installed) {
			if err := os.Remove(in.Path); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "not executable", wantErr: "not executable", change: func(t *testing.T, in *Installed) {
			if err := os.Chmod(in.Path, 0o644); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "emptied", wantErr: "is empty", change: func(t *testing.T, in *Installed) {
			if err := os.Truncate(in.Path, 0); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "a directory in its place", wantErr: "not a regular file", change: func(t *testing.T, in *Installed) {
			if err := os.Remove(in.Path); err != nil {
				t.Fatal(err)
			}
			if err := os.Mkdir(in.Path, 0o755); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in, err := Install(t.TempDir(), spec(t, "example.com/nfs", "v1"), 0o755)
			if err != nil {
				t.Fatal(err)
			}
			tc.change(t, in)
			err = in.Check()
			switch {
			case tc.wantErr == "" && err != nil:
				t.Errorf("Check: %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Errorf("Check: %v, want an error with %q", err, tc.wantErr)
			}
		})
	}
}
