package drivers

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/nodeplug/nodeplug/pkg/util/testutil"
)

var attachDriver = filepath.Join("nodeplug.io~attach", "attach")

type attachReply struct {
	Status       string          `json:"status"`
	Message      string          `json:"message"`
	Capabilities map[string]bool `json:"capabilities"`
	VolumeName   string          `json:"volumeName"`
	DevicePath   string          `json:"device"`
	Attached     *bool           `json:"attached"`
}

// attachEnv runs nodeplug.io/attach with its state and log in a temporary
// directory and an empty PATH (busybox sh runs its applets regardless).
type attachEnv struct {
	stateDir, logDir string
}

func newAttachEnv(t *testing.T) *attachEnv {
	t.Helper()
	requireBusybox(t)
	dir := t.TempDir()
	return &attachEnv{stateDir: filepath.Join(dir, "state"), logDir: filepath.Join(dir, "log")}
}

// run calls the driver, checks that it printed exactly one line of JSON and
// decodes it.
func (e *attachEnv) run(t *testing.T, args ...string) (attachReply, int) {
	t.Helper()
	out, code := runDriver(t, attachDriver, []string{"PATH=" + filepath.Join(e.stateDir, "no-bin"),
		"NODEPLUG_ATTACH_STATE_DIR=" + e.stateDir, "NODEPLUG_ATTACH_LOG_DIR=" + e.logDir}, args...)
	if strings.Count(string(out), "\n") != 1 || !strings.HasSuffix(string(out), "\n") {
		t.Fatalf("driver %q printed %q, want one line", args, out)
	}
	var r attachReply
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("driver %q printed %q, not JSON: %v", args, out, err)
	}
	return r, code
}

// ok calls the driver and fails the test unless it answers Success, exit 0.
func (e *attachEnv) ok(t *testing.T, args ...string) attachReply {
	t.Helper()
	r, code := e.run(t, args...)
	if code != 0 || r.Status != "Success" {
		t.Fatalf("driver %q = %+v, exit %d; want Success, exit 0", args, r, code)
	}
	return r
}

func (e *attachEnv) driverLog(t *testing.T) []string {
	t.Helper()
	return readDriverLog(t, e.logDir)
}

func TestAttachInit(t *testing.T) {
	e := newAttachEnv(t)
	r := e.ok(t, "init")
	if !r.Capabilities["attach"] {
		t.Fatalf("init = %+v, want capabilities.attach true", r)
	}
	requireInitLogged(t, e.driverLog(t))
}

func TestAttachGetVolumeName(t *testing.T) {
	e := newAttachEnv(t)
	for _, tc := range []struct{ opts, want string }{
		// What the flexvolume plugin passes: sorted keys, the PV's name.
		{`{"kubernetes.io/fsType":"","kubernetes.io/pvOrVolumeName":"pv-1","kubernetes.io/readwrite":"rw","volume":"other"}`, "pv-1"},
		{`{"volume":"vol-a"}`, "vol-a"},
		{`{ "volume" : "spaced" ,"x":"y"}`, "spaced"},
		{"{\n  \"volume\": \"multi-line\"\n}", "multi-line"},
		// A key inside another option's value does not count.
		{`{"note":"\"volume\":\"evil\"","volume":"good"}`, "good"},
		{`{"volume":"good","note":",\"volume\":\"evil\""}`, "good"},
		// Characters a file name cannot safely hold become "_".
		{`{"volume":"a\/b \"c\""}`, "a_b__c_"},
	} {
		if r := e.ok(t, "getvolumename", tc.opts); r.VolumeName != tc.want {
			t.Errorf("getvolumename %s = %q, want %q", tc.opts, r.VolumeName, tc.want)
		}
	}
	for _, opts := range []string{`{}`, `{"x":"y"}`, `{"volume":""}`, `{"volume":".."}`, `not json`} {
		if r, code := e.run(t, "getvolumename", opts); code != 1 || r.Status != "Failure" {
			t.Errorf("getvolumename %s = %+v, exit %d; want Failure, exit 1", opts, r, code)
		}
	}
}

func TestAttachIsAttachedDetach(t *testing.T) {
	e := newAttachEnv(t)
	opts := `{"kubernetes.io/pvOrVolumeName":"pv-1","kubernetes.io/secret/token":"c2VjcmV0"}`
	isAttached := func(node string) bool {
		t.Helper()
		r := e.ok(t, "isattached", opts, node)
		if r.Attached == nil {
			t.Fatalf("isattached %s = %+v, no attached field", node, r)
		}
		return *r.Attached
	}
	if isAttached("node-a") {
		t.Fatal("isattached before attach = true")
	}
	if r := e.ok(t, "attach", opts, "node-a"); r.DevicePath != "/dev/nodeplug-attach/pv-1" {
		t.Fatalf("attach devicePath = %q, want /dev/nodeplug-attach/pv-1", r.DevicePath)
	}
	b, err := os.ReadFile(filepath.Join(e.stateDir, "pv-1.attached"))
	if err != nil || strings.TrimSpace(string(b)) != "node-a" {
		t.Fatalf("marker = %q, %v; want node-a", b, err)
	}
	// A retried attach changes nothing.
	e.ok(t, "attach", opts, "node-a")
	if !isAttached("node-a") || isAttached("node-b") {
		t.Fatal("after attach to node-a: want attached to node-a only")
	}
	// A detach from a node the volume is not attached to leaves it attached.
	e.ok(t, "detach", "pv-1", "node-b")
	if !isAttached("node-a") {
		t.Fatal("detach from node-b detached the volume from node-a")
	}
	e.ok(t, "detach", "pv-1", "node-a")
	if isAttached("node-a") {
		t.Fatal("isattached after detach = true")
	}
	if _, err := os.Stat(filepath.Join(e.stateDir, "pv-1.attached")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("marker after detach: %v, want it gone", err)
	}
	e.ok(t, "detach", "pv-1", "node-a")
	if r := e.ok(t, "waitforattach", "/dev/nodeplug-attach/pv-1", opts); r.DevicePath != "/dev/nodeplug-attach/pv-1" {
		t.Fatalf("waitforattach devicePath = %q", r.DevicePath)
	}

	log := e.driverLog(t)
	if len(log) != 11 {
		t.Fatalf("driver.log has %d lines, want one per call (11):\n%s", len(log), strings.Join(log, "\n"))
	}
	if !strings.HasSuffix(log[1], ` attach {"kubernetes.io/pvOrVolumeName":"pv-1","kubernetes.io/secret/token":"<redacted>"} node-a`) {
		t.Errorf("driver.log line of attach = %q, want the call with the secret redacted", log[1])
	}
	if all := strings.Join(log, "\n"); strings.Contains(all, "c2VjcmV0") {
		t.Errorf("driver.log holds the secret:\n%s", all)
	}
}

func TestAttachUsage(t *testing.T) {
	e := newAttachEnv(t)
	for _, args := range [][]string{{"attach", "{}", "node"}, {"attach", `{"volume":"v"}`}, {"isattached", `{"volume":"v"}`},
		{"detach", "v"}, {"detach", "..", "node"}, {"mountdevice", "relative", "/dev/x", "{}"}, {"unmountdevice"}} {
		if r, code := e.run(t, args...); code != 1 || r.Status != "Failure" || r.Message == "" {
			t.Errorf("driver %q = %+v, exit %d; want Failure with a message, exit 1", args, r, code)
		}
	}
}

func TestAttachUnsupportedCommands(t *testing.T) {
	e := newAttachEnv(t)
	for _, args := range [][]string{{}, {"mount", "/d", "{}"}, {"unmount", "/d"}, {"expandvolume", "{}", "1", "2"}, {"nodeexpand"}, {`bad"name`}} {
		r, code := e.run(t, args...)
		if code != 1 || r.Status != "Not supported" {
			t.Errorf("driver %q = %+v, exit %d; want Not supported, exit 1", args, r, code)
		}
	}
}

func TestAttachUnmountDeviceNotMounted(t *testing.T) {
	e := newAttachEnv(t)
	dir := filepath.Join(t.TempDir(), "pv-1")
	e.ok(t, "unmountdevice", dir)
	e.ok(t, "unmountdevice", filepath.Join(t.TempDir(), "missing"))
}

// TestAttachMountDevice mounts and unmounts a device mount as the kubelet
// would, twice each (needs root that may mount; under CI=true its absence
// fails the test).
func TestAttachMountDevice(t *testing.T) {
	testutil.RequireMount(t)
	e := newAttachEnv(t)
	dir := filepath.Join(t.TempDir(), "mounts", "pv-1")
	t.Cleanup(func() {
		if _, mounted := isMounted(t, dir); mounted {
			if err := syscall.Unmount(dir, syscall.MNT_DETACH); err != nil {
				t.Errorf("cleanup: lazy unmount of %s: %v", dir, err)
			}
		}
	})
	const dev = "/dev/nodeplug-attach/pv-1"
	for i := 0; i < 2; i++ {
		e.ok(t, "mountdevice", dir+"/", dev, `{"kubernetes.io/pvOrVolumeName":"pv-1"}`)
		if fstype, _ := isMounted(t, dir); fstype != "tmpfs" {
			t.Fatalf("mountdevice #%d: %s has type %q, want tmpfs", i+1, dir, fstype)
		}
		if b, err := os.ReadFile(filepath.Join(dir, "device")); err != nil || string(b) != dev+"\n" {
			t.Fatalf("mountdevice #%d: device file = %q, %v; want %q", i+1, b, err, dev)
		}
	}
	if n := mountCount(t, dir); n != 1 {
		t.Fatalf("%s is mounted %d times after two mountdevice calls, want once", dir, n)
	}
	for i := 0; i < 2; i++ {
		e.ok(t, "unmountdevice", dir)
		if _, mounted := isMounted(t, dir); mounted {
			t.Fatalf("unmountdevice #%d: %s still mounted", i+1, dir)
		}
	}
}

func mountCount(t *testing.T, dir string) int {
	t.Helper()
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) > 4 && f[4] == dir {
			n++
		}
	}
	return n
}
