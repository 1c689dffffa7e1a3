package wipe

import (
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
	"k8s.io/klog/v2/ktesting"

	"github.com/nodeplug/nodeplug/pkg/localpv/testutil"
	utiltestutil "github.com/nodeplug/nodeplug/pkg/util/testutil"
)

const loopBytes = 12 << 20

// marker is what the previous tenant left on the device, over all of it.
var marker = []byte("previous tenant's secret marker\n")

func TestProgramsOnLoopDevices(t *testing.T) {
	tests := []struct {
		name    string
		program string
		args    []string
		// noDiscard uses a loop device without discard support.
		noDiscard bool
		// viaSymlink passes a symlink to the device.
		viaSymlink bool
		wantErr    string
		// wantKept is the span that still holds the marker; the rest of
		// the device must read zeroes.
		wantKept *span
	}{
		{name: "shred.sh 2", program: Shred, args: []string{"2"}},
		{name: "shred.sh 2 through a symlink", program: Shred, args: []string{"2"}, viaSymlink: true},
		{name: "dd_zero.sh", program: DDZero},
		{name: "blkdiscard.sh", program: BlkDiscard},
		{name: "blkdiscard.sh without discard support", program: BlkDiscard, noDiscard: true,
			wantErr: "does not support discard (BLKDISCARD: operation not supported)", wantKept: &span{0, loopBytes}},
		{name: "quick_reset.sh", program: QuickReset},
		{name: "quick_reset.sh without discard support", program: QuickReset, noDiscard: true,
			wantKept: &span{signatureSpan, loopBytes - 2*signatureSpan}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			utiltestutil.RequireRoot(t)
			_, ctx := ktesting.NewTestContext(t)
			var dev string
			if tc.noDiscard {
				dev = testutil.LoopDeviceWithoutDiscard(t, loopBytes)
			} else {
				dev = testutil.LoopDevice(t, loopBytes)
			}
			writeMarker(t, dev)
			target := dev
			if tc.viaSymlink {
				target = filepath.Join(t.TempDir(), "disk")
				if err := os.Symlink(dev, target); err != nil {
					t.Fatal(err)
				}
			}
			r := newRunner()
			r.getenv = mapEnv(map[string]string{BlockDeviceVariable: target})
			var stderr bytes.Buffer
			checkExit(t, r.main(ctx, tc.program, tc.args, &stderr), stderr.String(), tc.wantErr)
			checkContents(t, dev, tc.wantKept)
		})
	}
}

func TestOpenBlockDeviceRefuses(t *testing.T) {
	utiltestutil.RequireRoot(t)
	dir := t.TempDir()
	file, fifo := filepath.Join(dir, "file"), filepath.Join(dir, "fifo")
	if err := os.WriteFile(file, []byte("data"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	held := testutil.LoopDevice(t, 1<<20)
	f, err := os.OpenFile(held, os.O_RDONLY|unix.O_EXCL, 0)
	if err != nil {
		t.Fatalf("failed to hold %s: %v", held, err)
	}
	t.Cleanup(func() { _ = f.Close() })
	mounted := mountedLoopDevice(t)
	tests := []struct {
		name, path, wantErr string
	}{
		{name: "regular file", path: file, wantErr: "refusing to wipe " + file + ": not a block device (mode -rw-r--r--)"},
		{name: "FIFO, without blocking", path: fifo, wantErr: "not a block device (mode p"},
		{name: "character device", path: "/dev/null", wantErr: "refusing to wipe /dev/null: not a block device (mode Dc"},
		{name: "directory", path: dir, wantErr: "not a block device (mode d"},
		{name: "missing", path: filepath.Join(dir, "gone"), wantErr: "no such file or directory"},
		{name: "device held by another exclusive opener", path: held,
			wantErr: "refusing to wipe " + held + ": it is in use (mounted, or held by md, device-mapper or another exclusive user): open " + held + ": device or resource busy"},
		{name: "mounted device", path: mounted, wantErr: "refusing to wipe " + mounted + ": it is in use"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d, err := OpenBlockDevice(tc.path)
			if err == nil {
				_ = d.Close()
				t.Fatalf("opened %s, want %q", tc.path, tc.wantErr)
			}
			if !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("error %q, want %q", err, tc.wantErr)
			}
		})
	}
}

// mountedLoopDevice returns a loop device with an ext2 filesystem that is
// mounted until the test ends.
func mountedLoopDevice(t *testing.T) string {
	t.Helper()
	utiltestutil.RequireMount(t)
	utiltestutil.RequireCommand(t, "mke2fs")
	dev := testutil.LoopDevice(t, 4<<20)
	if out, err := exec.Command("mke2fs", "-q", "-F", dev).CombinedOutput(); err != nil {
		t.Fatalf("mke2fs %s: %v: %s", dev, err, out)
	}
	dir := t.TempDir()
	if err := unix.Mount(dev, dir, "ext2", 0, ""); err != nil {
		t.Fatalf("failed to mount %s: %v", dev, err)
	}
	t.Cleanup(func() {
		if err := unix.Unmount(dir, 0); err != nil {
			t.Errorf("failed to unmount %s: %v", dir, err)
		}
	})
	return dev
}

func writeMarker(t *testing.T, dev string) {
	t.Helper()
	f, err := os.OpenFile(dev, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(bytes.Repeat(marker, loopBytes/len(marker)+1)[:loopBytes]); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
}

// checkContents checks that kept still holds the marker and everything
// else reads zeroes.
func checkContents(t *testing.T, dev string, kept *span) {
	t.Helper()
	f, err := os.Open(dev)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	got, err := io.ReadAll(f)
	if err != nil || len(got) != loopBytes {
		t.Fatalf("read %d bytes of %s: %v", len(got), dev, err)
	}
	want := make([]byte, loopBytes)
	if kept != nil {
		copy(want[kept.off:kept.end()], bytes.Repeat(marker, loopBytes/len(marker)+1)[kept.off:kept.end()])
	}
	if i := firstDifference(got, want); i >= 0 {
		t.Errorf("%s differs at offset %d: got %q, want %q", dev, i, got[i:min(i+16, len(got))], want[i:min(i+16, len(want))])
	}
}

func firstDifference(a, b []byte) int {
	for i := range a {
		if a[i] != b[i] {
			return i
		}
	}
	return -1
}
