// Package drivers tests the flex drivers of the mount-utilities image. The
// drivers are busybox sh scripts; the tests run them with the host's
// busybox and a PATH that holds only a fake (or freshly built) daemon.
package drivers

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nodeplug/nodeplug/pkg/util/testutil"
)

var driver = filepath.Join("nodeplug.io~fuse", "fuse")

type reply struct {
	Status       string          `json:"status"`
	Message      string          `json:"message"`
	Capabilities map[string]bool `json:"capabilities"`
}

type env struct {
	bin, logDir, stateDir string
	timeout               string
}

func newEnv(t *testing.T) *env {
	t.Helper()
	requireBusybox(t)
	dir := t.TempDir()
	e := &env{bin: filepath.Join(dir, "bin"), logDir: filepath.Join(dir, "log"), stateDir: filepath.Join(dir, "state"), timeout: "10"}
	if err := os.Mkdir(e.bin, 0o755); err != nil {
		t.Fatal(err)
	}
	return e
}

// fakeDaemon installs a nodeplug-fuse-loopback that runs script (sh).
func (e *env) fakeDaemon(t *testing.T, script string) {
	t.Helper()
	body := "#!" + busybox + " sh\n" + script + "\n"
	if err := os.WriteFile(filepath.Join(e.bin, "nodeplug-fuse-loopback"), []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
}

// run calls the driver and decodes its reply. It fails the test if the
// driver's stdout stays open after the driver exits (ExecSync would hang).
func (e *env) run(t *testing.T, args ...string) (reply, int) {
	t.Helper()
	out, code := runDriver(t, driver, []string{"PATH=" + e.bin, "NODEPLUG_FUSE_LOG_DIR=" + e.logDir,
		"NODEPLUG_FUSE_STATE_DIR=" + e.stateDir, "NODEPLUG_FUSE_MOUNT_TIMEOUT=" + e.timeout}, args...)
	var r reply
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("driver %q printed %q, not JSON: %v", args, out, err)
	}
	return r, code
}

func (e *env) driverLog(t *testing.T) []string {
	t.Helper()
	return readDriverLog(t, e.logDir)
}

func TestInit(t *testing.T) {
	e := newEnv(t)
	r, code := e.run(t, "init")
	if code != 0 || r.Status != "Success" || r.Capabilities == nil || r.Capabilities["attach"] {
		t.Fatalf("init = %+v, exit %d; want Success with attach false, exit 0", r, code)
	}
	requireInitLogged(t, e.driverLog(t))
}

func TestUnsupportedCommands(t *testing.T) {
	e := newEnv(t)
	for _, args := range [][]string{{}, {"attach", "{}", "node"}, {"getvolumename", "{}"}, {"mountdevice", "/d", "/dev/x", "{}"}, {`bad"name`}} {
		r, code := e.run(t, args...)
		if code != 1 || r.Status != "Not supported" {
			t.Errorf("driver %q = %+v, exit %d; want Not supported, exit 1", args, r, code)
		}
	}
}

func TestUnmountNotMounted(t *testing.T) {
	e := newEnv(t)
	dir := filepath.Join(t.TempDir(), "vol")
	r, code := e.run(t, "unmount", dir)
	if code != 0 || r.Status != "Success" {
		t.Fatalf("unmount of a directory that is not mounted = %+v, exit %d; want Success", r, code)
	}
	if log := e.driverLog(t); len(log) != 1 || !strings.HasSuffix(log[0], " unmount "+dir) {
		t.Fatalf("driver.log = %q, want one line ending in 'unmount %s'", log, dir)
	}
}

func TestMountDaemonFails(t *testing.T) {
	e := newEnv(t)
	e.fakeDaemon(t, `echo "boom: cannot serve $1 at $2" >&2; exit 1`)
	dir := filepath.Join(t.TempDir(), "vol-a")
	opts := `{"kubernetes.io/secret/password":"c2VjcmV0","kubernetes.io/pod.name":"p"}`
	r, code := e.run(t, "mount", dir, opts)
	want := "boom: cannot serve " + filepath.Join(e.stateDir, backingName(dir)) + " at " + dir
	if code != 1 || r.Status != "Failure" || !strings.Contains(r.Message, want) {
		t.Fatalf("mount = %+v, exit %d; want Failure with the daemon log tail %q", r, code, want)
	}
	log := e.driverLog(t)
	if len(log) != 1 || strings.Contains(log[0], "c2VjcmV0") || !strings.Contains(log[0], `"kubernetes.io/secret/password":"<redacted>"`) {
		t.Fatalf("driver.log = %q, want the mount call with the secret redacted", log)
	}
}

func TestMountTimeoutStopsDaemon(t *testing.T) {
	e := newEnv(t)
	e.timeout = "1"
	pidFile := filepath.Join(t.TempDir(), "daemon.pid")
	e.fakeDaemon(t, `echo $$ >`+pidFile+`; echo "starting slowly"; exec sleep 60`)
	started := time.Now()
	r, code := e.run(t, "mount", filepath.Join(t.TempDir(), "vol"), "{}")
	if code != 1 || r.Status != "Failure" || !strings.Contains(r.Message, "within 1 s") || !strings.Contains(r.Message, "starting slowly") {
		t.Fatalf("mount = %+v, exit %d; want a timeout Failure with the daemon log tail", r, code)
	}
	if took := time.Since(started); took > 5*time.Second {
		t.Fatalf("mount took %v with a 1 s timeout", took)
	}
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(5 * time.Second); syscall.Kill(pid, 0) == nil; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("daemon %d still running after the timeout", pid)
		}
	}
}

// isMounted reports whether dir is a mount point and its file system type.
func isMounted(t *testing.T, dir string) (string, bool) {
	t.Helper()
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for s := bufio.NewScanner(f); s.Scan(); {
		fields := strings.Fields(s.Text())
		if len(fields) > 4 && fields[4] == dir {
			for i := 6; i+1 < len(fields); i++ {
				if fields[i] == "-" {
					return fields[i+1], true
				}
			}
		}
	}
	return "", false
}

// TestMountAndUnmountWithRealDaemon builds nodeplug-fuse-loopback and runs
// the driver's mount and unmount as the kubelet would (needs root and
// /dev/fuse; under CI=true their absence fails the test).
func TestMountAndUnmountWithRealDaemon(t *testing.T) {
	testutil.RequireMount(t)
	if st, err := os.Stat("/dev/fuse"); err != nil || st.Mode()&os.ModeCharDevice == 0 {
		testutil.MissingCapability(t, "needs /dev/fuse (modprobe fuse): %v", err)
	}
	testutil.RequireCommand(t, "go")
	e := newEnv(t)
	build := exec.Command("go", "build", "-o", filepath.Join(e.bin, "nodeplug-fuse-loopback"), "../fuse-loopback")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the daemon: %v\n%s", err, out)
	}
	dir := filepath.Join(t.TempDir(), "vol-real")
	t.Cleanup(func() {
		if _, mounted := isMounted(t, dir); mounted {
			if err := syscall.Unmount(dir, syscall.MNT_DETACH); err != nil {
				t.Errorf("cleanup: lazy unmount of %s: %v", dir, err)
			}
		}
		if t.Failed() {
			b, _ := os.ReadFile(filepath.Join(e.logDir, "daemon.log"))
			t.Logf("daemon.log:\n%s", b)
		}
	})

	r, code := e.run(t, "mount", dir, "{}")
	if code != 0 || r.Status != "Success" {
		t.Fatalf("mount = %+v, exit %d; want Success", r, code)
	}
	if fstype, _ := isMounted(t, dir); fstype != "fuse.nodeplug" {
		t.Fatalf("%s: type %q, want fuse.nodeplug", dir, fstype)
	}
	// A repeated mount call finds the volume served and starts nothing.
	if r, code := e.run(t, "mount", dir, "{}"); code != 0 || r.Status != "Success" {
		t.Fatalf("second mount = %+v, exit %d; want Success", r, code)
	}
	if err := os.WriteFile(filepath.Join(dir, "f"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(e.stateDir, backingName(dir), "f")); err != nil {
		t.Fatalf("file written through the mount is not in the backing directory: %v", err)
	}

	if r, code := e.run(t, "unmount", dir); code != 0 || r.Status != "Success" {
		t.Fatalf("unmount = %+v, exit %d; want Success", r, code)
	}
	if _, mounted := isMounted(t, dir); mounted {
		t.Fatalf("%s still mounted after unmount", dir)
	}
	if r, code := e.run(t, "unmount", dir); code != 0 || r.Status != "Success" {
		t.Fatalf("second unmount = %+v, exit %d; want Success", r, code)
	}
	// The daemon notices the unmount and exits.
	deadline := time.Now().Add(10 * time.Second)
	for {
		b, _ := os.ReadFile(filepath.Join(e.logDir, "daemon.log"))
		if strings.Contains(string(b), "Unmounted from outside") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the daemon did not log its exit after the unmount")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// backingName is the driver's backing directory name for mount dir dir.
func backingName(dir string) string {
	return strings.ReplaceAll(strings.TrimPrefix(dir, "/"), "/", "_")
}
