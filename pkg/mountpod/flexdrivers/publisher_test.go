package flexdrivers

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/types"

	"github.com/nodeplug/nodeplug/pkg/mountpod"
)

type finder map[string]mountpod.Target

// running lists the UIDs of pods that run but are not Ready.
var running = map[types.UID]bool{}

func (f finder) Find(string) (mountpod.Target, error) { return mountpod.Target{}, nil }
func (f finder) Served() map[string]mountpod.Target   { return f }
func (f finder) Namespace() string                    { return "kube-mount" }
func (f finder) Runs(uid types.UID) bool {
	for _, t := range f {
		if t.UID == uid {
			return true
		}
	}
	return running[uid]
}

func pod(uid string) mountpod.Target {
	return mountpod.Target{Namespace: "kube-mount", Name: "mp-" + uid, UID: types.UID("uid-" + uid), Container: "utilities"}
}

func listDir(t *testing.T, dir string) []string {
	var out []string
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && d.Name() != markerName {
			rel, _ := filepath.Rel(dir, p)
			out = append(out, rel)
		}
		return nil
	})
	slices.Sort(out)
	return out
}

func TestSync(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "pod-drivers")
	served := finder{}
	p := New(dir, served)
	if err := p.Reset(); err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		name      string
		set       func()
		want      []string
		rewritten string // file expected to change
		unchanged string // file expected to keep its inode
	}{
		{name: "nothing served", set: func() {}, want: nil},
		{name: "flex driver served, in-tree ignored", set: func() {
			served["nodeplug.io/fuse"] = pod("a")
			served["kubernetes.io/local-volume"] = pod("a")
		}, want: []string{"nodeplug.io~fuse/fuse"}},
		{name: "driver without vendor, invalid name skipped", set: func() {
			served["lvm"] = pod("a")
			served["Bad_Vendor/x"] = pod("a")
		}, want: []string{"lvm/lvm", "nodeplug.io~fuse/fuse"}},
		{name: "same pod: no rewrite", set: func() {}, want: []string{"lvm/lvm", "nodeplug.io~fuse/fuse"}, unchanged: "nodeplug.io~fuse/fuse"},
		{name: "new serving pod: rewrite", set: func() { served["nodeplug.io/fuse"] = pod("b") },
			want: []string{"lvm/lvm", "nodeplug.io~fuse/fuse"}, rewritten: "nodeplug.io~fuse/fuse"},
		{name: "pod not Ready but running: kept", set: func() { delete(served, "lvm"); running["uid-a"] = true },
			want: []string{"lvm/lvm", "nodeplug.io~fuse/fuse"}, unchanged: "lvm/lvm"},
		{name: "pod gone: removed", set: func() {
			delete(running, "uid-a")
			for k, t := range served {
				if t.UID == "uid-a" {
					delete(served, k)
				}
			}
		}, want: []string{"nodeplug.io~fuse/fuse"}},
	}
	inode := map[string]uint64{}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			s.set()
			served, err := p.Sync(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if len(served) != len(p.finder.Served())-countInTree(p.finder.Served())-countInvalid(p.finder.Served()) {
				t.Fatalf("Sync reports %v served, want %d", served, len(s.want))
			}
			if got := listDir(t, dir); !slices.Equal(got, s.want) {
				t.Fatalf("dir holds %v, want %v", got, s.want)
			}
			for _, f := range []string{s.unchanged, s.rewritten} {
				if f == "" {
					continue
				}
				fi, _ := os.Stat(filepath.Join(dir, f))
				ino := inodeOf(fi)
				if f == s.unchanged && ino != inode[f] {
					t.Fatalf("%s was rewritten", f)
				}
				if f == s.rewritten && ino == inode[f] {
					t.Fatalf("%s was not rewritten", f)
				}
			}
			for _, f := range s.want {
				fi, err := os.Stat(filepath.Join(dir, f))
				if err != nil || fi.Mode()&0o100 == 0 {
					t.Fatalf("%s: %v, mode %v", f, err, fi.Mode())
				}
				inode[f] = inodeOf(fi)
			}
		})
	}
	body, _ := os.ReadFile(filepath.Join(dir, "nodeplug.io~fuse/fuse"))
	if !strings.Contains(string(body), "uid-b") || !strings.Contains(string(body), `"status":"Failure"`) {
		t.Fatalf("placeholder:\n%s", body)
	}
}

func countInTree(m map[string]mountpod.Target) (n int) {
	for k := range m {
		if strings.HasPrefix(k, "kubernetes.io/") {
			n++
		}
	}
	return n
}

func countInvalid(m map[string]mountpod.Target) (n int) {
	for k := range m {
		if strings.HasPrefix(k, "Bad_") {
			n++
		}
	}
	return n
}

// TestReset: placeholders of an earlier run are gone after Reset, so the
// prober never inits them before the pod cache is synced; a directory
// nodeplug did not create is never emptied.
func TestReset(t *testing.T) {
	stale := func(t *testing.T, dir string) {
		os.MkdirAll(filepath.Join(dir, "old~drv"), 0o750)
		os.WriteFile(filepath.Join(dir, "old~drv", "drv"), []byte("x"), 0o750)
	}
	cases := map[string]struct {
		setup    func(t *testing.T, dir string) string // returns the dir to reset
		wantErr  string
		wantLeft []string
	}{
		"new directory is created": {setup: func(t *testing.T, dir string) string { return filepath.Join(dir, "a", "b") }},
		"own directory of an earlier run is emptied": {setup: func(t *testing.T, dir string) string {
			if err := New(dir, finder{}).Reset(); err != nil {
				t.Fatal(err)
			}
			stale(t, dir)
			return dir
		}},
		"empty foreign directory is taken": {setup: func(t *testing.T, dir string) string { return dir }},
		"foreign directory with content is refused and kept": {setup: func(t *testing.T, dir string) string {
			stale(t, dir)
			return dir
		}, wantErr: "will not empty it", wantLeft: []string{"old~drv/drv"}},
		"root is refused":          {setup: func(*testing.T, string) string { return "/" }, wantErr: "system directory"},
		"relative path is refused": {setup: func(*testing.T, string) string { return "drivers" }, wantErr: "not an absolute path"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			base := t.TempDir()
			dir := tc.setup(t, base)
			err := New(dir, finder{}).Reset()
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want %q", err, tc.wantErr)
				}
			} else if err != nil {
				t.Fatal(err)
			}
			if !filepath.IsAbs(dir) || dir == "/" {
				return
			}
			if got := listDir(t, dir); !slices.Equal(got, tc.wantLeft) {
				t.Fatalf("left %v, want %v", got, tc.wantLeft)
			}
			if _, err := os.Stat(filepath.Join(dir, markerName)); (err == nil) != (tc.wantErr == "") {
				t.Fatalf("marker: %v", err)
			}
		})
	}
}

func TestCheckDir(t *testing.T) {
	const flex = "/usr/libexec/kubernetes/kubelet-plugins/volume/exec"
	cases := map[string]bool{ // dir -> refused
		"/":                         true,
		"/tmp":                      true,
		"/var/lib/":                 true,
		flex:                        true,
		flex + "/x":                 true,
		"/usr/libexec/kubernetes":   true,
		DefaultControllerManagerDir: false,
		"/var/lib/kcm/drivers":      false,
	}
	for dir, refused := range cases {
		if err := CheckDir(dir, flex); (err != nil) != refused {
			t.Errorf("CheckDir(%q) = %v, want refused %v", dir, err, refused)
		}
	}
}

func TestKickNeverBlocks(t *testing.T) {
	p := New(t.TempDir(), finder{})
	for range 10 {
		p.Kick()
	}
	if len(p.kick) != 1 {
		t.Fatalf("%d kicks queued", len(p.kick))
	}
}
