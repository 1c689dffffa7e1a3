package driver

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/nodeplug/nodeplug/pkg/util/groupexec"
	utiltestutil "github.com/nodeplug/nodeplug/pkg/util/testutil"
)

// exampleDriver returns the path of a driver under deploy/flexvolume/drivers.
// The example drivers are part of the repository, so a missing one is a
// failure, not a reason to skip.
func exampleDriver(t *testing.T, dirName, exe string) string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	p := filepath.Join(filepath.Dir(file), "..", "..", "..", "deploy", "flexvolume", "drivers", dirName, exe)
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("example driver %s is missing, but it is part of the repository (deploy/flexvolume/drivers/%s/%s): %v", p, dirName, exe, err)
	}
	return p
}

func isMountPoint(dir string) bool {
	b, _ := os.ReadFile("/proc/mounts")
	return strings.Contains(string(b), " "+dir+" ")
}

// TestExampleTmpfsDriver runs deploy/flexvolume/drivers/nodeplug.io~tmpfs.
func TestExampleTmpfsDriver(t *testing.T) {
	utiltestutil.RequireMount(t)
	d := New(exampleDriver(t, "nodeplug.io~tmpfs", "tmpfs"), groupexec.New(), Config{})
	ctx := t.Context()
	caps, err := d.Init(ctx)
	if err != nil || caps.Attach || caps.SELinuxRelabel || !caps.FSGroup {
		t.Fatalf("Init = %+v, %v", caps, err)
	}
	dir := filepath.Join(t.TempDir(), "vol")
	t.Cleanup(func() { _ = unix.Unmount(dir, unix.MNT_DETACH) })
	if err := d.Mount(ctx, dir, &VolumeOptions{PVOrVolumeName: "v", Options: map[string]string{"size": "4m"}}); err != nil {
		t.Fatal(err)
	}
	if !isMountPoint(dir) {
		t.Fatal("tmpfs not mounted")
	}
	if err := d.Unmount(ctx, dir); err != nil || isMountPoint(dir) {
		t.Fatalf("Unmount: %v (still mounted: %v)", err, isMountPoint(dir))
	}
	if _, err := d.Attach(ctx, nil, "n"); !IsNotSupported(err) {
		t.Errorf("Attach: %v, want Not supported", err)
	}
}

// TestExampleLoopDriver runs deploy/flexvolume/drivers/nodeplug.io~loop
// through a whole attach, mount, unmount, detach cycle.
func TestExampleLoopDriver(t *testing.T) {
	utiltestutil.RequireMount(t)
	utiltestutil.RequireCommand(t, "mkfs.ext4", "losetup")
	if out, err := exec.Command("losetup", "-f").CombinedOutput(); err != nil {
		utiltestutil.MissingCapability(t, "no loop devices: %v %s", err, out)
	}
	state := t.TempDir()
	t.Setenv("NODEPLUG_LOOP_STATE", state)
	d := New(exampleDriver(t, "nodeplug.io~loop", "loop"), groupexec.New(), Config{CallTimeout: time.Minute})
	ctx := t.Context()
	if caps, err := d.Init(ctx); err != nil || !caps.Attach {
		t.Fatalf("Init = %+v, %v", caps, err)
	}
	opts := &VolumeOptions{FSType: "ext4", PVOrVolumeName: "pv1", Options: map[string]string{"size": "16M", "dir": state}}
	img, err := d.Attach(ctx, opts, "node1")
	if err != nil || img != filepath.Join(state, "pv1.img") {
		t.Fatalf("Attach = %q, %v", img, err)
	}
	if ok, err := d.IsAttached(ctx, opts, "node1"); err != nil || !ok {
		t.Fatalf("IsAttached = %v, %v", ok, err)
	}
	dev, err := d.WaitForAttach(ctx, img, opts, time.Minute)
	if err != nil || !strings.HasPrefix(dev, "/dev/loop") {
		t.Fatalf("WaitForAttach = %q, %v", dev, err)
	}
	dmp := filepath.Join(t.TempDir(), "global")
	t.Cleanup(func() {
		_ = unix.Unmount(dmp, unix.MNT_DETACH)
		_ = exec.Command("losetup", "-d", dev).Run()
	})
	if err := d.MountDevice(ctx, dmp, dev, opts); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dmp, "data"), []byte("x"), 0o644); err != nil {
		t.Fatalf("ext4 not writable: %v", err)
	}
	if err := d.UnmountDevice(ctx, dmp); err != nil || isMountPoint(dmp) {
		t.Fatalf("UnmountDevice: %v", err)
	}
	if err := d.Detach(ctx, "pv1", "node1"); err != nil {
		t.Fatal(err)
	}
	if ok, err := d.IsAttached(ctx, opts, "node1"); err != nil || ok {
		t.Fatalf("IsAttached after detach = %v, %v", ok, err)
	}
}
