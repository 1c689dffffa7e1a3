package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestMain lets the test binary serve as the supervisor it starts for a
// unit with Restart= (it runs os.Executable()).
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == superviseVerb {
		os.Exit(run(newManager(os.Getenv), os.Args[1:]))
	}
	os.Exit(m.Run())
}

func TestLoadUnit(t *testing.T) {
	cases := []struct {
		name, unit string
		dropIns    map[string]string
		wantArgv   []string
		wantEnv    []string
		wantErr    string
	}{
		{name: "plain", unit: "[Service]\nExecStart=/bin/sleep 60\n", wantArgv: []string{"/bin/sleep", "60"}},
		{name: "quotes and continuation", unit: "[Service]\nEnvironment=\"A=b c\" D=e\nExecStart=/bin/echo \"x y\" \\\n  'z'\n",
			wantArgv: []string{"/bin/echo", "x y", "z"}, wantEnv: []string{"A=b c", "D=e"}},
		{name: "drop-in replaces ExecStart", unit: "[Service]\nExecStart=/bin/sleep 60\n",
			dropIns:  map[string]string{"50-e2e.conf": "[Service]\nExecStart=\nExecStart=/bin/sleep 61\n"},
			wantArgv: []string{"/bin/sleep", "61"}},
		{name: "second ExecStart without reset", unit: "[Service]\nExecStart=/bin/sleep 60\n",
			dropIns: map[string]string{"50.conf": "[Service]\nExecStart=/bin/sleep 61\n"}, wantErr: "second ExecStart"},
		{name: "relative command", unit: "[Service]\nExecStart=sleep 60\n", wantErr: "absolute path"},
		{name: "no ExecStart", unit: "[Service]\nKillSignal=SIGINT\n", wantErr: "no ExecStart"},
		{name: "unterminated quote", unit: "[Service]\nExecStart=/bin/echo \"x\n", wantErr: "unterminated quote"},
		{name: "not KEY=VALUE", unit: "[Service]\nExecStart\n", wantErr: "not KEY=VALUE"},
		{name: "unknown signal", unit: "[Service]\nExecStart=/bin/true\nKillSignal=SIGFOO\n", wantErr: "unknown signal"},
		{name: "bad environment", unit: "[Service]\nExecStart=/bin/true\nEnvironment=NOEQUALS\n", wantErr: "not KEY=VALUE"},
		{name: "unsupported restart", unit: "[Service]\nExecStart=/bin/true\nRestart=on-abort\n", wantErr: "only no, always"},
		{name: "unsupported output", unit: "[Service]\nExecStart=/bin/true\nStandardOutput=tty\n", wantErr: "only append"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			write(t, filepath.Join(dir, "x.service"), tc.unit)
			for f, c := range tc.dropIns {
				write(t, filepath.Join(dir, "x.service.d", f), c)
			}
			u, err := loadUnit([]string{dir}, "x.service")
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want it to say %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if strings.Join(u.ExecStart, "|") != strings.Join(tc.wantArgv, "|") {
				t.Errorf("ExecStart = %q, want %q", u.ExecStart, tc.wantArgv)
			}
			if strings.Join(u.Environment, "|") != strings.Join(tc.wantEnv, "|") {
				t.Errorf("Environment = %q, want %q", u.Environment, tc.wantEnv)
			}
		})
	}
}

func TestQuoteWordsRoundTrip(t *testing.T) {
	in := []string{"/bin/x", "a b", `q"uote`, `back\slash`, "--flag=v"}
	out, err := splitWords(quoteWords(in))
	if err != nil || strings.Join(out, "|") != strings.Join(in, "|") {
		t.Fatalf("splitWords(quoteWords(%q)) = %q, %v", in, out, err)
	}
}

// TestLifecycle drives real processes: start, is-active, show, stop, and
// the exit codes upstream's specs and operators read.
func TestLifecycle(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "svc.log")
	write(t, filepath.Join(dir, "svc.service"), "[Unit]\nDescription=test\n[Service]\nEnvironment=GREETING=hi\n"+
		"ExecStart=/bin/sh -c 'echo $GREETING; exec sleep 300'\nStandardOutput=append:"+log+"\nTimeoutStopSec=5\n")
	// Ignores SIGTERM: stop must fall back to SIGKILL after TimeoutStopSec.
	write(t, filepath.Join(dir, "stubborn.service"), "[Service]\nExecStart=/bin/sh -c 'trap \"\" TERM; while :; do sleep 0.1; done'\nTimeoutStopSec=1\n")
	m := testManager(dir)
	t.Cleanup(func() { run(m, []string{"stop", "svc", "stubborn"}) })

	steps := []struct {
		name   string
		argv   []string
		wantRC int
	}{
		{"inactive before start", []string{"is-active", "svc"}, exitInactive},
		{"status of inactive", []string{"status", "svc"}, exitInactive},
		{"start", []string{"start", "svc"}, 0},
		{"start again is a no-op", []string{"start", "svc"}, 0},
		{"active", []string{"is-active", "svc"}, 0},
		{"status of active", []string{"status", "svc"}, 0},
		{"show", []string{"show", "svc", "--property", "ActiveState", "--value"}, 0},
		{"restart", []string{"restart", "svc"}, 0},
		{"stop", []string{"stop", "svc"}, 0},
		{"stop again", []string{"stop", "svc"}, 0},
		{"start unknown unit", []string{"start", "nothere"}, exitNotLoaded},
		{"status unknown unit", []string{"status", "nothere"}, exitNoSuchUnit},
		{"show unknown unit", []string{"show", "nothere", "-p", "ActiveState"}, 0},
		{"unknown verb", []string{"frobnicate", "svc"}, exitFailure},
		{"unknown option", []string{"start", "--bogus", "svc"}, exitFailure},
		{"stubborn start", []string{"start", "stubborn"}, 0},
		{"stubborn stop kills", []string{"stop", "stubborn"}, 0},
		{"stubborn inactive", []string{"is-active", "stubborn"}, exitInactive},
	}
	var firstPID int
	for _, s := range steps {
		if rc := run(m, s.argv); rc != s.wantRC {
			t.Fatalf("%s: systemctl %s exited %d, want %d", s.name, strings.Join(s.argv, " "), rc, s.wantRC)
		}
		p, ok := m.running("svc.service")
		switch s.name {
		case "start":
			if !ok {
				t.Fatal("svc is not running after start")
			}
			firstPID = p.PID
			waitFor(t, func() bool { raw, _ := os.ReadFile(log); return strings.Count(string(raw), "hi\n") == 1 })
		case "restart":
			if !ok || p.PID == firstPID {
				t.Fatalf("after restart: running %v, pid %d (before %d), want a new process", ok, p.PID, firstPID)
			}
			reap(t, firstPID)
			waitFor(t, func() bool { raw, _ := os.ReadFile(log); return strings.Count(string(raw), "hi\n") == 2 })
		case "stop":
			if ok {
				t.Fatal("svc still runs after stop")
			}
		}
	}
	raw, _ := os.ReadFile(log)
	if strings.Count(string(raw), "hi\n") != 2 {
		t.Errorf("log %q, want the unit's Environment echoed once per start (2)", raw)
	}
}

// TestRestartAlways: a unit with Restart=always that dies (as kube-proxy
// exits when its Node is deleted) runs again after RestartSec, under a new
// PID; stop ends it for good, supervisor included.
func TestRestartAlways(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "px.service"), "[Service]\nExecStart=/bin/sleep 300\nRestart=always\nRestartSec=100ms\nTimeoutStopSec=5\n")
	m := testManager(dir)
	t.Cleanup(func() { run(m, []string{"stop", "px"}) })
	if rc := run(m, []string{"start", "px"}); rc != 0 {
		t.Fatalf("start exited %d", rc)
	}
	first, ok := m.running("px.service")
	if !ok {
		t.Fatal("px is not running after start")
	}
	if err := syscall.Kill(first.PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { p, ok := m.running("px.service"); return ok && p.PID != first.PID })
	if rc := run(m, []string{"is-active", "px"}); rc != 0 {
		t.Fatalf("is-active after the restart exited %d, want 0", rc)
	}
	second, _ := m.running("px.service")
	super, ok := m.supervising("px.service")
	if !ok {
		t.Fatal("no supervisor")
	}
	if rc := run(m, []string{"stop", "px"}); rc != 0 {
		t.Fatalf("stop exited %d", rc)
	}
	waitFor(t, func() bool { return !m.aliveProc(second) && !m.aliveProc(super) })
	if rc := run(m, []string{"is-active", "px"}); rc != exitInactive {
		t.Fatalf("is-active after stop exited %d, want %d", rc, exitInactive)
	}
}

// TestReusedPIDIsNotTheService: a state file whose PID now belongs to
// another process (another start time) is not taken for the service, and
// stop signals nothing.
func TestReusedPIDIsNotTheService(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "svc.service"), "[Service]\nExecStart=/bin/sleep 300\n")
	other := exec.Command("sleep", "300")
	if err := other.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = other.Process.Kill(); _ = other.Wait() })
	m := testManager(dir)
	write(t, m.statePath("svc.service"), strconv.Itoa(other.Process.Pid)+" 1\n")
	if rc := run(m, []string{"stop", "svc"}); rc != 0 {
		t.Fatalf("stop exited %d", rc)
	}
	if err := other.Process.Signal(syscall.Signal(0)); err != nil {
		t.Fatalf("the other process was signalled: %v", err)
	}
	if rc := run(m, []string{"is-active", "svc"}); rc != exitInactive {
		t.Fatalf("is-active exited %d, want %d", rc, exitInactive)
	}
}

func TestHostPID(t *testing.T) {
	// Outside a nested PID namespace no NSpid line has two PIDs: not found.
	if _, err := hostPID("/proc", "/proc", os.Getpid()); err == nil && !nested() {
		t.Fatal("hostPID found a process in a PID namespace this test does not run in")
	}
}

func nested() bool {
	raw, _ := os.ReadFile("/proc/self/status")
	for _, l := range strings.Split(string(raw), "\n") {
		if strings.HasPrefix(l, "NSpid:") {
			return strings.Count(l, "\t") > 1
		}
	}
	return false
}

// testManager is a manager whose only unit directory is dir.
func testManager(dir string) *manager {
	return &manager{dir: dir, unitPath: []string{dir}, stateDir: filepath.Join(dir, "state"), proc: "/proc"}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("condition not met in 5 s")
		}
	}
}

// reap waits for pid, a child of this test process once the command that
// started it returned, so it leaves no zombie.
func reap(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		var ws syscall.WaitStatus
		if got, _ := syscall.Wait4(pid, &ws, syscall.WNOHANG, nil); got == pid {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
