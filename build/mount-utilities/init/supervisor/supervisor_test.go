package supervisor

import (
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"k8s.io/klog/v2/ktesting"
)

// The test process plays PID 1: orphans of its descendants come to it.
func TestMain(m *testing.M) {
	if err := BecomeSubreaper(); err != nil {
		panic(err)
	}
	os.Exit(m.Run())
}

type result struct {
	code int
	err  error
}

// start runs Run in a goroutine with a signal channel that gets the real
// SIGCHLD; the test sends SIGTERM into the channel itself.
func start(t *testing.T, args []string) (chan<- os.Signal, <-chan result) {
	t.Helper()
	signals := make(chan os.Signal, 16)
	signal.Notify(signals, syscall.SIGCHLD)
	t.Cleanup(func() { signal.Stop(signals) })
	// A failed test must not leave its command running.
	t.Cleanup(func() {
		select {
		case signals <- syscall.SIGTERM:
		default:
		}
	})
	_, ctx := ktesting.NewTestContext(t)
	done := make(chan result, 1)
	go func() {
		code, err := Run(ctx, args, signals)
		done <- result{code, err}
	}()
	return signals, done
}

func wait(t *testing.T, done <-chan result) result {
	t.Helper()
	select {
	case r := <-done:
		return r
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return")
		return result{}
	}
}

// procState returns the state letter of pid ("S", "Z", ...) or "" if the
// process is gone.
func procState(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return ""
	}
	s := string(b)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(fields) < 2 {
		return "?"
	}
	return fields[0] + " ppid " + fields[1]
}

// mustBeOurOrphan waits until pid has been reparented to the test process
// (its parent exits a moment after it printed the pid).
func mustBeOurOrphan(t *testing.T, pid int) {
	t.Helper()
	want := "ppid " + strconv.Itoa(os.Getpid())
	deadline := time.Now().Add(800 * time.Millisecond)
	for {
		st := procState(pid)
		if strings.HasSuffix(st, want) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("grandchild %d: state %q, want it reparented to the test process %d", pid, st, os.Getpid())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// waitGone fails unless pid disappears: an orphan that exited and was not
// reaped stays in /proc as a zombie ("Z").
func waitGone(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		st := procState(pid)
		if st == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("orphan %d was not reaped: state %q", pid, st)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func readPid(t *testing.T, file string) int {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		b, err := os.ReadFile(file)
		if pid, perr := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && perr == nil {
			return pid
		}
		if time.Now().After(deadline) {
			t.Fatalf("no pid in %s: %v", file, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestCommandOrphanReapedAndSIGTERMForwarded(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "grandchild")
	// The subshell starts a short sleep and exits: the sleep is orphaned
	// while the command (exec'ed into a long sleep) keeps running.
	script := "(sleep 1 </dev/null >/dev/null 2>&1 & echo $! >" + pidFile + ".tmp; mv " + pidFile + ".tmp " + pidFile + "); exec sleep 60"
	signals, done := start(t, []string{"sh", "-c", script})
	pid := readPid(t, pidFile)
	mustBeOurOrphan(t, pid)
	waitGone(t, pid)

	signals <- syscall.SIGTERM
	if r := wait(t, done); r.err != nil || r.code != 0 {
		t.Fatalf("Run after SIGTERM = %d, %v; want 0, nil (the forwarded signal ended the command)", r.code, r.err)
	}
}

func TestPauseReapsOrphansAndStopsOnSIGTERM(t *testing.T) {
	// sh exits at once (and is waited for here); its sleep is orphaned.
	out, err := exec.Command("sh", "-c", "sleep 1 </dev/null >/dev/null 2>&1 & echo $!").Output()
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(out)))
	if err != nil {
		t.Fatal(err)
	}
	mustBeOurOrphan(t, pid)
	signals, done := start(t, nil)
	waitGone(t, pid)

	select {
	case r := <-done:
		t.Fatalf("Run returned %+v before SIGTERM", r)
	default:
	}
	signals <- syscall.SIGTERM
	if r := wait(t, done); r.err != nil || r.code != 0 {
		t.Fatalf("Run after SIGTERM = %d, %v; want 0, nil", r.code, r.err)
	}
}

func TestCommandExitCode(t *testing.T) {
	for _, tc := range []struct {
		name   string
		script string
		want   int
	}{
		{"success", "exit 0", 0},
		{"failure", "exit 3", 3},
		{"killed unasked", "kill -KILL $$", 128 + int(syscall.SIGKILL)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, done := start(t, []string{"sh", "-c", tc.script})
			if r := wait(t, done); r.err != nil || r.code != tc.want {
				t.Fatalf("Run = %d, %v; want %d, nil", r.code, r.err, tc.want)
			}
		})
	}
}

func TestMissingCommand(t *testing.T) {
	_, done := start(t, []string{"nodeplug-no-such-command"})
	if r := wait(t, done); r.err == nil || r.code != 1 {
		t.Fatalf("Run = %d, %v; want 1 and an error", r.code, r.err)
	}
}
