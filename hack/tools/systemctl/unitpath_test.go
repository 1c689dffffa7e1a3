package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// unitTree is a node's unit directories in a test: its own, then stand-ins
// for /etc/systemd/system, /run/systemd/system and /usr/lib/systemd/system.
type unitTree struct{ own, etc, run, usr string }

func newUnitTree(t *testing.T) (unitTree, *manager) {
	t.Helper()
	root := t.TempDir()
	tr := unitTree{own: filepath.Join(root, "own"), etc: filepath.Join(root, "etc"),
		run: filepath.Join(root, "run"), usr: filepath.Join(root, "usr")}
	m := testManager(tr.own)
	m.unitPath = []string{tr.own, tr.etc, tr.run, tr.usr}
	for _, d := range m.unitPath {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return tr, m
}

// TestUnitSearchPath: the unit file is the first of the search path's,
// the node's own directory first; drop-ins come from every directory,
// sorted by file name across them, a file masking same-named files in
// later directories; an empty file or a link to /dev/null masks.
func TestUnitSearchPath(t *testing.T) {
	svc := func(cmd string) string { return "[Service]\nExecStart=" + cmd + "\n" }
	cases := []struct {
		name      string
		files     func(tr unitTree) map[string]string // path: content ("->X" makes a link to X)
		wantArgv  string
		wantFrom  func(tr unitTree) string
		wantDrops func(tr unitTree) []string
		wantErr   error
	}{
		{name: "only in /usr/lib",
			files:    func(tr unitTree) map[string]string { return map[string]string{tr.usr + "/x.service": svc("/bin/usr")} },
			wantArgv: "/bin/usr", wantFrom: func(tr unitTree) string { return tr.usr + "/x.service" }},
		{name: "/etc masks /usr/lib",
			files: func(tr unitTree) map[string]string {
				return map[string]string{tr.usr + "/x.service": svc("/bin/usr"), tr.etc + "/x.service": svc("/bin/etc")}
			},
			wantArgv: "/bin/etc", wantFrom: func(tr unitTree) string { return tr.etc + "/x.service" }},
		{name: "the node's own directory masks /etc",
			files: func(tr unitTree) map[string]string {
				return map[string]string{tr.etc + "/x.service": svc("/bin/etc"), tr.own + "/x.service": svc("/bin/own")}
			},
			wantArgv: "/bin/own", wantFrom: func(tr unitTree) string { return tr.own + "/x.service" }},
		{name: "drop-ins from every directory sorted by name",
			files: func(tr unitTree) map[string]string {
				return map[string]string{tr.usr + "/x.service": svc("/bin/usr"),
					tr.usr + "/x.service.d/10-a.conf":   "[Service]\nExecStart=\nExecStart=/bin/usr10\n",
					tr.own + "/x.service.d/51-e2e.conf": "[Service]\nExecStart=\nExecStart=/bin/own51\n",
					tr.etc + "/x.service.d/20-b.conf":   "[Service]\nExecStart=\nExecStart=/bin/etc20\n",
					tr.usr + "/x.service.d/notes.txt":   "not a drop-in"}
			},
			wantArgv: "/bin/own51",
			wantDrops: func(tr unitTree) []string {
				return []string{tr.usr + "/x.service.d/10-a.conf", tr.etc + "/x.service.d/20-b.conf", tr.own + "/x.service.d/51-e2e.conf"}
			}},
		{name: "a same-named drop-in in an earlier directory masks the later one",
			files: func(tr unitTree) map[string]string {
				return map[string]string{tr.usr + "/x.service": svc("/bin/usr"),
					tr.usr + "/x.service.d/10-kubeadm.conf": "[Service]\nExecStart=\nExecStart=/bin/usr10\n",
					tr.etc + "/x.service.d/10-kubeadm.conf": "[Service]\nExecStart=\nExecStart=/bin/etc10\n"}
			},
			wantArgv:  "/bin/etc10",
			wantDrops: func(tr unitTree) []string { return []string{tr.etc + "/x.service.d/10-kubeadm.conf"} }},
		{name: "a drop-in linked to /dev/null masks and adds nothing",
			files: func(tr unitTree) map[string]string {
				return map[string]string{tr.usr + "/x.service": svc("/bin/usr"),
					tr.usr + "/x.service.d/10-kubeadm.conf": "[Service]\nExecStart=\nExecStart=/bin/usr10\n",
					tr.etc + "/x.service.d/10-kubeadm.conf": "->/dev/null"}
			},
			wantArgv: "/bin/usr", wantDrops: func(unitTree) []string { return nil }},
		{name: "empty unit file masks",
			files: func(tr unitTree) map[string]string {
				return map[string]string{tr.usr + "/x.service": svc("/bin/usr"), tr.etc + "/x.service": ""}
			},
			wantErr: errMasked},
		{name: "unit linked to /dev/null masks",
			files: func(tr unitTree) map[string]string {
				return map[string]string{tr.usr + "/x.service": svc("/bin/usr"), tr.etc + "/x.service": "->/dev/null"}
			},
			wantErr: errMasked},
		{name: "drop-ins without a unit file",
			files: func(tr unitTree) map[string]string {
				return map[string]string{tr.etc + "/x.service.d/10.conf": svc("/bin/etc")}
			},
			wantErr: errNotFound},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tr, m := newUnitTree(t)
			for p, c := range tc.files(tr) {
				if target, ok := strings.CutPrefix(c, "->"); ok {
					mkdir(t, filepath.Dir(p))
					if err := os.Symlink(target, p); err != nil {
						t.Fatal(err)
					}
					continue
				}
				write(t, p, c)
			}
			u, err := loadUnit(m.unitPath, "x.service")
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("err = %v, want %v", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Join(u.ExecStart, " "); got != tc.wantArgv {
				t.Errorf("ExecStart = %q, want %q", got, tc.wantArgv)
			}
			if tc.wantFrom != nil && u.Path != tc.wantFrom(tr) {
				t.Errorf("unit file %s, want %s", u.Path, tc.wantFrom(tr))
			}
			if tc.wantDrops != nil && strings.Join(u.DropIns, "|") != strings.Join(tc.wantDrops(tr), "|") {
				t.Errorf("drop-ins %q, want %q", u.DropIns, tc.wantDrops(tr))
			}
		})
	}
}

// TestUnitPathFromEnvironment: the node's own directory leads systemd's
// directories; NODEPLUG_SYSTEMD_UNIT_PATH, or else the own directory's
// unit-path file, replaces the whole path.
func TestUnitPathFromEnvironment(t *testing.T) {
	cases := []struct {
		name, env, file string
		want            []string
	}{
		{name: "default", want: append([]string{"OWN"}, systemdUnitPath...)},
		{name: "environment", env: "/a::/b", want: []string{"/a", "/b"}},
		{name: "file, a directory a line", file: "# the node's own only\nOWN\n\n/x/y\n", want: []string{"OWN", "/x/y"}},
		{name: "environment before file", env: "/a", file: "/b\n", want: []string{"/a"}},
		{name: "empty file is the default", file: "\n", want: append([]string{"OWN"}, systemdUnitPath...)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			own := t.TempDir()
			if tc.file != "" {
				write(t, filepath.Join(own, unitPathFile), strings.ReplaceAll(tc.file, "OWN", own))
			}
			env := map[string]string{unitPathEnv: tc.env, "NODEPLUG_SYSTEMD_DIR": own}
			m := newManager(func(k string) string { return env[k] })
			want := strings.ReplaceAll(strings.Join(tc.want, ":"), "OWN", own)
			if strings.Join(m.unitPath, ":") != want {
				t.Errorf("unit path %q, want %s", m.unitPath, want)
			}
		})
	}
}

func mkdir(t *testing.T, dir string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
}
