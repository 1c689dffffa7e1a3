package main

import (
	"bufio"
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nodeplug/nodeplug/pkg/util/testutil"
)

// daemonEnv makes the test binary run main() instead of the tests, so the
// tests exercise the real daemon as a separate process.
const daemonEnv = "NODEPLUG_FUSE_LOOPBACK_TEST_DAEMON"

func TestMain(m *testing.M) {
	if os.Getenv(daemonEnv) == "1" {
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// requireFUSE skips without root, mount(2) or /dev/fuse, and fails
// instead under CI=true.
func requireFUSE(t *testing.T) {
	t.Helper()
	testutil.RequireMount(t)
	if st, err := os.Stat("/dev/fuse"); err != nil || st.Mode()&os.ModeCharDevice == 0 {
		testutil.MissingCapability(t, "needs /dev/fuse (modprobe fuse): %v", err)
	}
}

// mountInfo returns the type and source of the mount at dir, if any.
func mountInfo(t *testing.T, dir string) (fstype, source string, ok bool) {
	t.Helper()
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		fields := strings.Fields(s.Text())
		if len(fields) < 5 || fields[4] != dir {
			continue
		}
		for i := 6; i+2 < len(fields); i++ {
			if fields[i] == "-" {
				fstype, source, ok = fields[i+1], fields[i+2], true
			}
		}
	}
	return fstype, source, ok
}

type daemon struct {
	cmd    *exec.Cmd
	output bytes.Buffer
	exited chan error
}

// startDaemon runs the daemon on source and mountpoint and waits for the
// mount. Cleanup always detaches the mount and stops the daemon.
func startDaemon(t *testing.T, source, mountpoint string) *daemon {
	t.Helper()
	d := &daemon{exited: make(chan error, 1)}
	d.cmd = exec.Command(os.Args[0], "-v=2", source, mountpoint)
	d.cmd.Env = append(os.Environ(), daemonEnv+"=1")
	d.cmd.Stdout, d.cmd.Stderr = &d.output, &d.output
	if err := d.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { d.exited <- d.cmd.Wait() }()
	t.Cleanup(func() {
		if _, _, mounted := mountInfo(t, mountpoint); mounted {
			if err := syscall.Unmount(mountpoint, syscall.MNT_DETACH); err != nil {
				t.Errorf("cleanup: lazy unmount of %s: %v", mountpoint, err)
			}
		}
		if d.cmd.ProcessState == nil {
			_ = d.cmd.Process.Kill()
			<-d.exited
		}
		if t.Failed() {
			t.Logf("daemon output:\n%s", d.output.String())
		}
	})

	deadline := time.Now().Add(10 * time.Second)
	for {
		if fstype, src, ok := mountInfo(t, mountpoint); ok {
			if fstype != "fuse."+fsType || src != fsName {
				t.Fatalf("mount at %s is %s from %s, want fuse.%s from %s", mountpoint, fstype, src, fsType, fsName)
			}
			return d
		}
		select {
		case err := <-d.exited:
			d.exited <- err
			t.Fatalf("daemon exited before mounting: %v", err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s not mounted after 10 s", mountpoint)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitExit waits for the daemon to exit and requires exit status 0.
func (d *daemon) waitExit(t *testing.T) {
	t.Helper()
	select {
	case err := <-d.exited:
		d.exited <- err
		if err != nil {
			t.Fatalf("daemon exited with %v, want 0", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("daemon still running 15 s after the unmount")
	}
}

func TestWriteThroughMountThenUmountFromOutside(t *testing.T) {
	requireFUSE(t)
	source, mountpoint := t.TempDir(), t.TempDir()
	d := startDaemon(t, source, mountpoint)

	want := []byte("written through FUSE\n")
	if err := os.WriteFile(filepath.Join(mountpoint, "hello.txt"), want, 0o644); err != nil {
		t.Fatalf("write through the mount: %v", err)
	}
	if got, err := os.ReadFile(filepath.Join(source, "hello.txt")); err != nil || !bytes.Equal(got, want) {
		t.Fatalf("file in SOURCE = %q, %v; want %q", got, err, want)
	}
	if err := os.Mkdir(filepath.Join(mountpoint, "sub"), 0o755); err != nil {
		t.Fatalf("mkdir through the mount: %v", err)
	}
	if st, err := os.Stat(filepath.Join(source, "sub")); err != nil || !st.IsDir() {
		t.Fatalf("directory in SOURCE: %v", err)
	}

	if out, err := exec.Command("umount", mountpoint).CombinedOutput(); err != nil {
		t.Fatalf("umount %s: %v: %s", mountpoint, err, out)
	}
	d.waitExit(t)
	if _, _, ok := mountInfo(t, mountpoint); ok {
		t.Fatalf("%s still mounted", mountpoint)
	}
}

func TestSIGTERMUnmounts(t *testing.T) {
	requireFUSE(t)
	source, mountpoint := t.TempDir(), t.TempDir()
	d := startDaemon(t, source, mountpoint)
	if err := d.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	d.waitExit(t)
	if _, _, ok := mountInfo(t, mountpoint); ok {
		t.Fatalf("%s still mounted after SIGTERM", mountpoint)
	}
}

func TestBadArguments(t *testing.T) {
	for _, args := range [][]string{{}, {"only-one"}, {"/nonexistent-source-dir", t.TempDir()}} {
		cmd := exec.Command(os.Args[0], args...)
		cmd.Env = append(os.Environ(), daemonEnv+"=1")
		out, err := cmd.CombinedOutput()
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() == 0 {
			t.Errorf("args %q: err %v, want a non-zero exit; output:\n%s", args, err, out)
		}
	}
}
