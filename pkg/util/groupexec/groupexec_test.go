package groupexec

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	utilexec "k8s.io/utils/exec"
)

func writeScript(t *testing.T, body string, mode os.FileMode) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "script")
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body), mode); err != nil {
		t.Fatal(err)
	}
	return p
}

// waitPid polls, for at most 5 s, until pidFile holds the pid of the
// script's background child, and returns it. It fails, saying so, when the
// script never wrote it: without a pid there is nothing to check, and pid 0
// would signal the test's own process group.
func waitPid(t *testing.T, pidFile string) int {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		b, err := os.ReadFile(pidFile)
		content := strings.TrimSpace(string(b))
		if pid, perr := strconv.Atoi(content); err == nil && perr == nil && pid > 0 {
			return pid
		}
		if time.Now().After(deadline) {
			switch {
			case errors.Is(err, fs.ErrNotExist):
				t.Fatalf("pid file %s was never written: the script did not start its background child within 5 s", pidFile)
			case err != nil:
				t.Fatalf("reading pid file %s: %v", pidFile, err)
			default:
				t.Fatalf("pid file %s holds %q after 5 s, not the pid of the script's background child", pidFile, content)
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// waitGone polls until pid no longer exists, for at most 5 s.
func waitGone(t *testing.T, pid int) {
	t.Helper()
	if pid <= 0 {
		t.Fatalf("waitGone(%d): not the pid of a child process", pid)
	}
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("background child %d of the killed script still alive 5 s later: the process group was not killed", pid)
}

// TestContextKillsWholeGroup: cancelling the context kills the script and
// its background child. The context is cancelled once the child's pid is
// known, not after a fixed time, so that a slow machine cannot cancel the
// script before it started the child.
func TestContextKillsWholeGroup(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "pid")
	script := writeScript(t, "sleep 300 &\necho $! > "+pidFile+"\nwait\n", 0o755)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	c := New().CommandContext(ctx, script)
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	pid := waitPid(t, pidFile)
	cancel()
	cancelled := time.Now()
	if err := c.Wait(); err == nil {
		t.Fatal("expected an error from a killed command")
	}
	if d := time.Since(cancelled); d > 4*time.Second {
		t.Fatalf("Wait returned %v after the context was cancelled: the group was not killed", d)
	}
	waitGone(t, pid)
}

func TestStopKillsWholeGroup(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "pid")
	script := writeScript(t, "trap '' TERM\nsleep 300 &\necho $! > "+pidFile+"\nwait\n", 0o755)
	c := NewWithOptions(Options{StopGrace: 100 * time.Millisecond}).Command(script)
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	pid := waitPid(t, pidFile)
	c.Stop()
	if err := c.Wait(); err == nil {
		t.Fatal("expected an error from a stopped command")
	}
	waitGone(t, pid)
}

func TestErrors(t *testing.T) {
	tests := []struct {
		name   string
		path   func(t *testing.T) string
		check  func(error) bool
		status int
	}{
		{
			name:  "missing executable",
			path:  func(t *testing.T) string { return filepath.Join(t.TempDir(), "nope") },
			check: func(err error) bool { return errors.Is(err, utilexec.ErrExecutableNotFound) },
		},
		{
			name:  "permission denied",
			path:  func(t *testing.T) string { return writeScript(t, "exit 0\n", 0o644) },
			check: func(err error) bool { return errors.Is(err, fs.ErrPermission) },
		},
		{
			name: "exit status",
			path: func(t *testing.T) string { return writeScript(t, "exit 3\n", 0o755) },
			check: func(err error) bool {
				var ee utilexec.ExitError
				return errors.As(err, &ee) && ee.ExitStatus() == 3
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New().Command(tc.path(t)).CombinedOutput()
			if err == nil || !tc.check(err) {
				t.Fatalf("unexpected error %v (%T)", err, err)
			}
		})
	}
}

func TestOutput(t *testing.T) {
	script := writeScript(t, "echo out\necho err >&2\n", 0o755)
	out, err := New().Command(script).Output()
	if err != nil || string(out) != "out\n" {
		t.Fatalf("Output = %q, %v", out, err)
	}
	out, err = New().Command(script).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "err") {
		t.Fatalf("CombinedOutput = %q, %v", out, err)
	}
}
