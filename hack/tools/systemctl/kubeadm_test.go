package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// kubeletUnit is a kubelet unit as the kubelet packages install it, and
// kubeadmDropIn the drop-in kubeadm's packages add (KUBELET_DIR and
// DEFAULT_DIR stand for /var/lib/kubelet and /etc/default).
const (
	kubeletUnit = `[Unit]
Description=kubelet: The Kubernetes Node Agent
Documentation=https://kubernetes.io/docs/
Wants=network-online.target
After=network-online.target

[Service]
ExecStart=/usr/bin/kubelet
Restart=always
StartLimitInterval=0
RestartSec=10

[Install]
WantedBy=multi-user.target
`
	kubeadmDropIn = `# kubeadm's settings of the kubelet
[Service]
Environment="KUBELET_KUBECONFIG_ARGS=--bootstrap-kubeconfig=/etc/kubernetes/bootstrap-kubelet.conf --kubeconfig=/etc/kubernetes/kubelet.conf"
Environment="KUBELET_CONFIG_ARGS=--config=KUBELET_DIR/config.yaml"
# written by kubeadm init and join
EnvironmentFile=-KUBELET_DIR/kubeadm-flags.env
# the operator's
EnvironmentFile=-DEFAULT_DIR/kubelet
ExecStart=
ExecStart=` + kubeadmExecStart + "\n"
)

// fakeKubelet exits at once until its --config file exists, as a kubelet
// before kubeadm init does; then it writes its arguments and stays up.
const fakeKubelet = `#!/bin/sh
echo run >>"$(dirname "$0")/runs"
for a in "$@"; do case "$a" in --config=*) c="${a#--config=}";; esac; done
[ -f "$c" ] || exit 1
printf '%s\n' "$@" >"$(dirname "$0")/args.tmp" && mv "$(dirname "$0")/args.tmp" "$(dirname "$0")/args"
exec sleep 300
`

// TestKubeadmKubelet: a kubelet unit in /usr/lib/systemd/system with
// kubeadm's drop-in beside it, enabled and started as the install guide
// says before kubeadm init: it crash-loops (is-active says activating or
// active, as kubeadm accepts) until kubeadm writes its files, and the
// next run reads them, with KUBELET_EXTRA_ARGS empty.
func TestKubeadmKubelet(t *testing.T) {
	tr, m := newUnitTree(t)
	root := filepath.Dir(tr.own)
	kubeletDir, defaultDir, bin := filepath.Join(root, "var-lib-kubelet"), filepath.Join(root, "etc-default"), filepath.Join(root, "bin")
	write(t, filepath.Join(tr.usr, "kubelet.service"), kubeletUnit)
	dropIn := strings.NewReplacer("KUBELET_DIR", kubeletDir, "DEFAULT_DIR", defaultDir, "/usr/bin/kubelet", bin+"/kubelet").Replace(kubeadmDropIn)
	write(t, filepath.Join(tr.usr, "kubelet.service.d", "10-kubeadm.conf"), dropIn)
	// The test's only change: a shorter RestartSec than the unit's 10 s.
	write(t, filepath.Join(tr.own, "kubelet.service.d", "99-test.conf"), "[Service]\nRestartSec=300ms\n")
	write(t, filepath.Join(bin, "kubelet"), fakeKubelet)
	if err := os.Chmod(filepath.Join(bin, "kubelet"), 0o755); err != nil {
		t.Fatal(err)
	}
	mkdir(t, kubeletDir)
	t.Cleanup(func() { run(m, []string{"stop", "kubelet"}) })

	if rc := run(m, []string{"enable", "--now", "kubelet"}); rc != 0 {
		t.Fatalf("enable --now kubelet exited %d, want 0", rc)
	}
	if s := m.unitFileState("kubelet.service"); s != "enabled" {
		t.Errorf("UnitFileState %s, want enabled", s)
	}
	if rc := run(m, []string{"is-enabled", "kubelet"}); rc != 0 {
		t.Errorf("is-enabled exited %d, want 0", rc)
	}
	runs := func() int {
		raw, _ := os.ReadFile(filepath.Join(bin, "runs"))
		return strings.Count(string(raw), "run\n")
	}
	waitFor(t, func() bool { return runs() >= 2 })
	if s := activeState(m, "kubelet.service"); s != "activating" && s != "active" {
		t.Errorf("a crash-looping kubelet is %s, want activating or active", s)
	}

	// kubeadm init writes its files; the kubelet's next run reads them.
	write(t, filepath.Join(kubeletDir, "config.yaml"), "kind: KubeletConfiguration\n")
	write(t, filepath.Join(kubeletDir, "kubeadm-flags.env"), `KUBELET_KUBEADM_ARGS="--container-runtime-endpoint=unix:///run/containerd/containerd.sock --node-ip=10.0.0.2"`+"\n")
	write(t, filepath.Join(defaultDir, "kubelet"), "KUBELET_EXTRA_ARGS=\n")
	want := strings.Join([]string{"--bootstrap-kubeconfig=/etc/kubernetes/bootstrap-kubelet.conf", "--kubeconfig=/etc/kubernetes/kubelet.conf",
		"--config=" + kubeletDir + "/config.yaml", "--container-runtime-endpoint=unix:///run/containerd/containerd.sock", "--node-ip=10.0.0.2"}, "\n") + "\n"
	args := func() string { raw, _ := os.ReadFile(filepath.Join(bin, "args")); return string(raw) }
	waitFor(t, func() bool { return args() == want && m.alive("kubelet.service") })

	first, _ := m.running("kubelet.service")
	if rc := run(m, []string{"restart", "kubelet"}); rc != 0 {
		t.Fatalf("restart exited %d", rc)
	}
	waitFor(t, func() bool { p, ok := m.running("kubelet.service"); return ok && p.PID != first.PID })
	super, _ := m.supervising("kubelet.service")
	if rc := run(m, []string{"stop", "kubelet"}); rc != 0 {
		t.Fatalf("stop exited %d", rc)
	}
	waitFor(t, func() bool { return !m.aliveProc(super) })
	if s := activeState(m, "kubelet.service"); s != "inactive" {
		t.Errorf("after stop the kubelet is %s, want inactive", s)
	}
}

// TestRestartSecHonoured: a service that exits at once is started, and
// started again no sooner than RestartSec after each run (no busy loop);
// stop ends the loop, between two runs too.
func TestRestartSecHonoured(t *testing.T) {
	dir := t.TempDir()
	runs := filepath.Join(dir, "runs")
	write(t, filepath.Join(dir, "crash.service"), "[Unit]\nStartLimitInterval=0\n[Service]\nExecStart=/bin/sh -c 'date +%s%N >>"+runs+"; exit 1'\n"+
		"Restart=always\nRestartSec=300ms\nStartLimitIntervalSec=0\n")
	m := testManager(dir)
	t.Cleanup(func() { run(m, []string{"stop", "crash"}) })
	if rc := run(m, []string{"start", "crash"}); rc != 0 {
		t.Fatalf("start of a service that exits at once exited %d, want 0", rc)
	}
	var times []int64
	waitFor(t, func() bool {
		raw, _ := os.ReadFile(runs)
		times = times[:0]
		for _, f := range strings.Fields(string(raw)) {
			n, _ := strconv.ParseInt(f, 10, 64)
			times = append(times, n)
		}
		return len(times) >= 4
	})
	for i := 1; i < len(times); i++ {
		if gap := time.Duration(times[i] - times[i-1]); gap < 300*time.Millisecond {
			t.Errorf("run %d started %s after run %d, want at least RestartSec (300ms)", i, gap, i-1)
		}
	}
	super, ok := m.supervising("crash.service")
	if !ok {
		t.Fatal("no supervisor")
	}
	if rc := run(m, []string{"stop", "crash"}); rc != 0 {
		t.Fatalf("stop exited %d", rc)
	}
	waitFor(t, func() bool { return !m.aliveProc(super) })
	if rc := run(m, []string{"is-active", "crash"}); rc != exitInactive {
		t.Errorf("is-active after stop exited %d, want %d", rc, exitInactive)
	}
}

// TestStartFailsOnMissingEnvironmentFile: a required EnvironmentFile=
// that does not exist fails the start (exit 1) and starts nothing, with
// or without Restart=.
func TestStartFailsOnMissingEnvironmentFile(t *testing.T) {
	cases := []struct{ name, restart string }{{"no restart", "no"}, {"restart always", "always"}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			missing := filepath.Join(dir, "missing.env")
			write(t, filepath.Join(dir, "x.service"), "[Service]\nEnvironmentFile="+missing+"\nExecStart=/bin/sleep 300\nRestart="+tc.restart+"\n")
			m := testManager(dir)
			t.Cleanup(func() { run(m, []string{"stop", "x"}) })
			if rc := run(m, []string{"start", "x"}); rc != exitFailure {
				t.Fatalf("start exited %d, want %d", rc, exitFailure)
			}
			if _, ok := m.running("x.service"); ok {
				t.Error("the service runs")
			}
			if _, ok := m.supervising("x.service"); ok {
				t.Error("a supervisor runs")
			}
			u, err := loadUnit(m.unitPath, "x.service")
			if err != nil {
				t.Fatal(err)
			}
			if err := m.start(u); err == nil || !strings.Contains(err.Error(), "EnvironmentFile="+missing) {
				t.Errorf("start: %v, want an error naming EnvironmentFile=%s", err, missing)
			}
		})
	}
}

// TestEnableIsEnabled: enable links the unit into the node's own
// <target>.wants (never into the other unit directories), is-enabled
// reports it as systemctl does (kubeadm's preflight reads its exit code),
// and --now starts or stops the unit.
func TestEnableIsEnabled(t *testing.T) {
	tr, m := newUnitTree(t)
	write(t, filepath.Join(tr.usr, "kubelet.service"), "[Service]\nExecStart=/bin/sleep 300\n[Install]\nWantedBy=multi-user.target\n")
	write(t, filepath.Join(tr.own, "static.service"), "[Service]\nExecStart=/bin/sleep 300\n")
	write(t, filepath.Join(tr.usr, "masked.service"), "[Service]\nExecStart=/bin/sleep 300\n[Install]\nWantedBy=multi-user.target\n")
	if err := os.Symlink(os.DevNull, filepath.Join(tr.etc, "masked.service")); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { run(m, []string{"stop", "kubelet"}) })
	steps := []struct {
		name      string
		argv      []string
		wantRC    int
		unit      string // whose UnitFileState is checked after the step
		wantState string
		running   bool
	}{
		{"disabled at first", []string{"is-enabled", "kubelet"}, exitFailure, "kubelet", "disabled", false},
		{"no [Install] is static", []string{"is-enabled", "static"}, 0, "static", "static", false},
		{"masked", []string{"is-enabled", "masked"}, exitFailure, "masked", "masked", false},
		{"not found", []string{"is-enabled", "nothere"}, exitFailure, "nothere", "not-found", false},
		{"enable", []string{"enable", "kubelet.service"}, 0, "kubelet", "enabled", false},
		{"enable again", []string{"enable", "kubelet"}, 0, "kubelet", "enabled", false},
		{"is-enabled", []string{"is-enabled", "kubelet"}, 0, "kubelet", "enabled", false},
		{"is-enabled --quiet", []string{"is-enabled", "--quiet", "kubelet"}, 0, "kubelet", "enabled", false},
		{"enable a static unit does nothing", []string{"enable", "static"}, 0, "static", "static", false},
		{"enable a masked unit fails", []string{"enable", "masked"}, exitFailure, "masked", "masked", false},
		{"enable a missing unit fails", []string{"enable", "nothere"}, exitFailure, "nothere", "not-found", false},
		{"disable", []string{"disable", "kubelet"}, 0, "kubelet", "disabled", false},
		{"enable --now starts", []string{"enable", "--now", "kubelet"}, 0, "kubelet", "enabled", true},
		{"disable --now stops", []string{"disable", "--now", "kubelet"}, 0, "kubelet", "disabled", false},
		{"one enabled or static is enough", []string{"is-enabled", "kubelet", "static"}, 0, "kubelet", "disabled", false},
	}
	for _, s := range steps {
		if rc := run(m, s.argv); rc != s.wantRC {
			t.Fatalf("%s: systemctl %s exited %d, want %d", s.name, strings.Join(s.argv, " "), rc, s.wantRC)
		}
		if got := m.unitFileState(unitName(s.unit)); got != s.wantState {
			t.Errorf("%s: UnitFileState of %s is %s, want %s", s.name, s.unit, got, s.wantState)
		}
		if got := m.alive("kubelet.service"); got != s.running {
			t.Errorf("%s: kubelet running %v, want %v", s.name, got, s.running)
		}
	}
	for _, d := range []string{tr.etc, tr.run, tr.usr} {
		if links, _ := filepath.Glob(filepath.Join(d, "*.wants")); len(links) > 0 {
			t.Errorf("enable wrote %q outside the node's own directory", links)
		}
	}
}

// TestKubeadmUnitLoads: every key of the kubelet packages' unit and
// kubeadm's drop-in loads; those not acted on are read and ignored.
func TestKubeadmUnitLoads(t *testing.T) {
	cases := []struct {
		name         string
		dropIn       string
		wantArgv     string
		wantEnvFiles string
	}{
		{name: "unit alone", wantArgv: "/usr/bin/kubelet"},
		{name: "unit and kubeadm's drop-in", dropIn: kubeadmDropIn, wantArgv: kubeadmExecStart,
			wantEnvFiles: "/var/lib/kubelet/kubeadm-flags.env?true /etc/default/kubelet?true"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			write(t, filepath.Join(dir, "kubelet.service"), kubeletUnit)
			if tc.dropIn != "" {
				real := strings.NewReplacer("KUBELET_DIR", "/var/lib/kubelet", "DEFAULT_DIR", "/etc/default").Replace(tc.dropIn)
				write(t, filepath.Join(dir, "kubelet.service.d", "10-kubeadm.conf"), real)
			}
			u, err := loadUnit([]string{dir}, "kubelet.service")
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Join(u.ExecStart, " "); got != tc.wantArgv {
				t.Errorf("ExecStart %q, want %q", got, tc.wantArgv)
			}
			var files []string
			for _, f := range u.EnvFiles {
				files = append(files, f.path+"?"+strconv.FormatBool(f.optional))
			}
			if got := strings.Join(files, " "); got != tc.wantEnvFiles {
				t.Errorf("EnvironmentFile %q, want %q", got, tc.wantEnvFiles)
			}
			if u.Restart != "always" || u.RestartSec != 10*time.Second || strings.Join(u.Install, " ") != "multi-user.target.wants" {
				t.Errorf("Restart=%s RestartSec=%s install %q, want always, 10s, multi-user.target.wants", u.Restart, u.RestartSec, u.Install)
			}
			for _, k := range []string{"[Unit]Documentation", "[Unit]Wants", "[Unit]After", "[Service]StartLimitInterval"} {
				if _, ok := u.Ignored[k]; !ok {
					t.Errorf("%s was not read (ignored %v)", k, u.Ignored)
				}
			}
		})
	}
}
