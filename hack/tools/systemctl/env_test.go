package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestParseEnvFile: systemd's environment file syntax.
func TestParseEnvFile(t *testing.T) {
	cases := []struct {
		name, in string
		want     []string
	}{
		{name: "kubeadm-flags.env", in: "KUBELET_KUBEADM_ARGS=\"--container-runtime-endpoint=unix:///run/containerd/containerd.sock --pod-infra-container-image=registry.local/pause:3.10\"\n",
			want: []string{"KUBELET_KUBEADM_ARGS=--container-runtime-endpoint=unix:///run/containerd/containerd.sock --pod-infra-container-image=registry.local/pause:3.10"}},
		{name: "empty value", in: "KUBELET_EXTRA_ARGS=\n", want: []string{"KUBELET_EXTRA_ARGS="}},
		{name: "comments and blank lines", in: "# a comment\n; another\n\n   \nA=1\n  # indented comment\nB=2", want: []string{"A=1", "B=2"}},
		{name: "a comment continued by a backslash", in: "# one \\\nA=hidden\nB=2\n", want: []string{"B=2"}},
		{name: "no equals sign is skipped", in: "JUSTAWORD\nA=1\n", want: []string{"A=1"}},
		{name: "blanks around key and value", in: "  A  =  x y  \n", want: []string{"A=x y"}},
		{name: "single quotes keep everything", in: `A='$x "y" \z'` + "\n", want: []string{`A=$x "y" \z`}},
		{name: "double quotes and their escapes", in: `A="a \"b\" \\ \$ \n"` + "\n", want: []string{`A=a "b" \ $ \n`}},
		{name: "quoted value spans lines", in: "A=\"one\ntwo\"\nB=3\n", want: []string{"A=one\ntwo", "B=3"}},
		{name: "backslash joins lines", in: "A=one \\\ntwo\n", want: []string{"A=one two"}},
		{name: "quotes inside an unquoted value stay", in: `A=--x="a b"` + "\n", want: []string{`A=--x="a b"`}},
		{name: "a comment sign after the value is part of it", in: "A=1 # two\n", want: []string{"A=1 # two"}},
		{name: "CRLF line ends", in: "A=1\r\nB=\"2\"\r\n", want: []string{"A=1", "B=2"}},
		{name: "last line without newline", in: "A=1", want: []string{"A=1"}},
		{name: "same key twice, both kept in order", in: "A=1\nA=2\n", want: []string{"A=1", "A=2"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := parseEnvFile(tc.in); strings.Join(got, "|") != strings.Join(tc.want, "|") {
				t.Errorf("parseEnvFile(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

// TestEnvironmentPrecedence: Environment= in unit and drop-in order, then
// the EnvironmentFile= files read at start in their order, a later
// assignment winning (so a file overrides Environment=, as in systemd); a
// missing optional file is skipped, a missing required one fails the
// start with a message that names it.
func TestEnvironmentPrecedence(t *testing.T) {
	cases := []struct {
		name    string
		service string
		files   map[string]string // name under the test dir: content
		want    map[string]string
		absent  []string
		wantErr string
	}{
		{name: "file overrides Environment whatever the line order",
			service: "EnvironmentFile=-DIR/a.env\nEnvironment=X=from-unit Y=unit-only\n",
			files:   map[string]string{"a.env": "X=from-file\n"},
			want:    map[string]string{"X": "from-file", "Y": "unit-only"}},
		{name: "later file wins", service: "EnvironmentFile=DIR/a.env\nEnvironmentFile=-DIR/b.env\n",
			files: map[string]string{"a.env": "X=a\nZ=a\n", "b.env": "X=b\n"},
			want:  map[string]string{"X": "b", "Z": "a"}},
		{name: "later Environment wins", service: "Environment=X=1\nEnvironment=\"X=2\" \"Y=two words\"\n",
			want: map[string]string{"X": "2", "Y": "two words"}},
		{name: "missing optional file", service: "EnvironmentFile=-DIR/none.env\nEnvironment=X=1\n",
			want: map[string]string{"X": "1", "PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}},
		{name: "missing required file", service: "EnvironmentFile=DIR/none.env\n",
			wantErr: "none.env does not exist"},
		{name: "empty EnvironmentFile= resets", service: "EnvironmentFile=DIR/none.env\nEnvironmentFile=\n",
			want: map[string]string{}},
		{name: "glob, in lexical order", service: "EnvironmentFile=DIR/*.env\n",
			files: map[string]string{"2.env": "X=2\n", "1.env": "X=1\nY=1\n"},
			want:  map[string]string{"X": "2", "Y": "1"}},
		{name: "invalid names are skipped", service: "EnvironmentFile=DIR/a.env\n",
			files: map[string]string{"a.env": "1X=no\nGOOD=yes\n"},
			want:  map[string]string{"GOOD": "yes"}, absent: []string{"1X"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			for f, c := range tc.files {
				write(t, filepath.Join(dir, f), c)
			}
			write(t, filepath.Join(dir, "x.service"), "[Service]\nExecStart=/bin/true\n"+strings.ReplaceAll(tc.service, "DIR", dir))
			m := testManager(dir)
			u, err := loadUnit(m.unitPath, "x.service")
			if err != nil {
				t.Fatal(err)
			}
			env, err := m.environment(u)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !strings.Contains(err.Error(), "EnvironmentFile=-") {
					t.Fatalf("err = %v, want it to say %q and how to make the file optional", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for k, want := range tc.want {
				if got, _ := lookupEnv(env, k); got != want {
					t.Errorf("%s = %q, want %q (env %q)", k, got, want, env)
				}
			}
			for _, k := range tc.absent {
				if v, ok := lookupEnv(env, k); ok {
					t.Errorf("%s = %q, want it unset", k, v)
				}
			}
		})
	}
}

// kubeadmExecStart is the command line of kubeadm's kubelet drop-in.
const kubeadmExecStart = "/usr/bin/kubelet $KUBELET_KUBECONFIG_ARGS $KUBELET_CONFIG_ARGS $KUBELET_KUBEADM_ARGS $KUBELET_EXTRA_ARGS"

// TestExpandArgv: $VAR as a word splits into words (and vanishes when
// empty or unset), ${VAR} is one word, $$ is a dollar, $VAR inside a word
// stays as it is.
func TestExpandArgv(t *testing.T) {
	env := []string{"KUBELET_KUBECONFIG_ARGS=--bootstrap-kubeconfig=/etc/kubernetes/bootstrap-kubelet.conf --kubeconfig=/etc/kubernetes/kubelet.conf",
		"KUBELET_CONFIG_ARGS=--config=/var/lib/kubelet/config.yaml", "KUBELET_KUBEADM_ARGS=--node-ip=10.0.0.2 --node-labels='a=b c'",
		"KUBELET_EXTRA_ARGS=", "TWO=a  b", "EMPTY="}
	cases := []struct {
		name, execStart string
		want            []string
	}{
		{name: "kubeadm's ExecStart, KUBELET_EXTRA_ARGS empty", execStart: kubeadmExecStart,
			want: []string{"/usr/bin/kubelet", "--bootstrap-kubeconfig=/etc/kubernetes/bootstrap-kubelet.conf", "--kubeconfig=/etc/kubernetes/kubelet.conf",
				"--config=/var/lib/kubelet/config.yaml", "--node-ip=10.0.0.2", "--node-labels=a=b c"}},
		{name: "braces make one word", execStart: "/bin/x ${TWO} --v=${TWO}", want: []string{"/bin/x", "a  b", "--v=a  b"}},
		{name: "empty braces stay a word", execStart: "/bin/x ${EMPTY} ${UNSET}", want: []string{"/bin/x", "", ""}},
		{name: "unset word vanishes", execStart: "/bin/x $UNSET y", want: []string{"/bin/x", "y"}},
		{name: "double dollar", execStart: "/bin/x $$TWO a$$b ${TWO}$$", want: []string{"/bin/x", "$TWO", "a$b", "a  b$"}},
		{name: "bare variable inside a word is literal", execStart: "/bin/sh -c 'echo $TWO'", want: []string{"/bin/sh", "-c", "echo $TWO"}},
		{name: "lone dollar", execStart: "/bin/x $ a$", want: []string{"/bin/x", "$", "a$"}},
		{name: "default and alternative", execStart: "/bin/x ${UNSET:-d} ${TWO:-d} ${TWO:+alt} ${EMPTY:+alt}", want: []string{"/bin/x", "d", "a  b", "alt", ""}},
		{name: "unterminated brace is literal", execStart: "/bin/x ${TWO", want: []string{"/bin/x", "${TWO"}},
		{name: "the command is not expanded", execStart: "/bin/$TWO", want: []string{"/bin/$TWO"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			argv, err := splitWords(tc.execStart)
			if err != nil {
				t.Fatal(err)
			}
			if got := expandArgv(argv, env); strings.Join(got, "|") != strings.Join(tc.want, "|") {
				t.Errorf("expandArgv(%q) = %q, want %q", tc.execStart, got, tc.want)
			}
		})
	}
}
