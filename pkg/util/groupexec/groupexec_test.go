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

// waitGone polls until pid no longer exists, for at most 5 s.
func waitGone(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("process %d still alive", pid)
}

func TestContextKillsWholeGroup(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "pid")
	script := writeScript(t, "sleep 300 &\necho $! > "+pidFile+"\nwait\n", 0o755)
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	err := New().CommandContext(ctx, script).Run()
	if err == nil {
		t.Fatal("expected an error from a killed command")
	}
	if d := time.Since(start); d > 4*time.Second {
		t.Fatalf("Run returned after %v, the group was not killed", d)
	}
	b, rerr := os.ReadFile(pidFile)
	if rerr != nil {
		t.Fatal(rerr)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	waitGone(t, pid)
}

func TestStopKillsWholeGroup(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "pid")
	script := writeScript(t, "trap '' TERM\nsleep 300 &\necho $! > "+pidFile+"\nwait\n", 0o755)
	c := NewWithOptions(Options{StopGrace: 100 * time.Millisecond}).Command(script)
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		if _, err := os.Stat(pidFile); err == nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	c.Stop()
	if err := c.Wait(); err == nil {
		t.Fatal("expected an error from a stopped command")
	}
	b, _ := os.ReadFile(pidFile)
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
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
