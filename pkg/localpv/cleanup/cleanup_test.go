package cleanup

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/klog/v2/ktesting"

	"github.com/nodeplug/nodeplug/pkg/localpv/discovery"
	"github.com/nodeplug/nodeplug/pkg/localpv/report"
	"github.com/nodeplug/nodeplug/pkg/localpv/testutil"
)

func newTestCleaner() Cleaner {
	return NewCleaner(&discovery.Scanner{}, &fakeChecker{}, discovery.SelfMountInfo, &bytes.Buffer{})
}

func TestCleanDirectoryKeepsMountPoint(t *testing.T) {
	testutil.RequireRoot(t)
	root := t.TempDir()
	vol := filepath.Join(root, "vol1")
	testutil.MountTmpfs(t, vol, 1<<20)
	outside := filepath.Join(t.TempDir(), "precious")
	if err := os.WriteFile(outside, []byte("keep"), 0o644); err != nil {
		t.Fatal(err)
	}
	mustWrite(t, filepath.Join(vol, "data"), "secret")
	mustWrite(t, filepath.Join(vol, ".hidden"), "secret")
	mustWrite(t, filepath.Join(vol, "dir", "sub", "f"), "secret")
	if err := os.Symlink(filepath.Dir(outside), filepath.Join(vol, "escape")); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Join(vol, "dir", "sub"), 0o000); err != nil {
		t.Fatal(err)
	}
	_, ctx := ktesting.NewTestContext(t)
	if err := newTestCleaner().Clean(ctx, Request{Kind: report.KindDirectory, MountDir: root, Path: vol}); err != nil {
		t.Fatalf("Clean: %v", err)
	}
	entries, err := os.ReadDir(vol)
	if err != nil || len(entries) != 0 {
		t.Fatalf("volume not empty: %v %v", entries, err)
	}
	mps, _ := discovery.MountPoints(discovery.SelfMountInfo)
	if !mps[vol] {
		t.Fatal("mount point was removed")
	}
	if b, err := os.ReadFile(outside); err != nil || string(b) != "keep" {
		t.Fatalf("file behind a symlink was touched: %q %v", b, err)
	}
}

// TestCleanDirectoryRefusesMountBelow: a file system mounted below the
// volume (a tenant's leaked bind mount, say) refuses the whole clean before
// anything is removed: the volume is left as it was for an admin to see.
func TestCleanDirectoryRefusesMountBelow(t *testing.T) {
	testutil.RequireRoot(t)
	root := t.TempDir()
	vol := filepath.Join(root, "vol1")
	testutil.MountTmpfs(t, vol, 1<<20)
	below := filepath.Join(vol, "busy")
	testutil.MountTmpfs(t, below, 1<<20)
	mustWrite(t, filepath.Join(below, "f"), "host data")
	mustWrite(t, filepath.Join(vol, "data"), "secret")
	_, ctx := ktesting.NewTestContext(t)
	err := newTestCleaner().Clean(ctx, Request{Kind: report.KindDirectory, MountDir: root, Path: vol})
	if err == nil || !strings.Contains(err.Error(), "refusing to clean "+vol+": "+below+" is mounted below it") {
		t.Fatalf("want a refusal naming %s, got %v", below, err)
	}
	for _, f := range []string{filepath.Join(below, "f"), filepath.Join(vol, "data")} {
		if _, err := os.Lstat(f); err != nil {
			t.Errorf("a refused clean removed %s: %v", f, err)
		}
	}
}

func TestCleanRefuses(t *testing.T) {
	testutil.RequireRoot(t)
	root := t.TempDir()
	plain := filepath.Join(root, "plain")
	mustWrite(t, filepath.Join(plain, "f"), "x")
	mounted := filepath.Join(root, "mounted")
	testutil.MountTmpfs(t, mounted, 1<<20)
	if err := os.Symlink(mounted, filepath.Join(root, "link")); err != nil {
		t.Fatal(err)
	}
	mustWrite(t, filepath.Join(root, "file"), "x")
	tests := []struct {
		name    string
		req     Request
		wantErr string
	}{
		{name: "not a mount point", req: Request{Kind: "d", MountDir: root, Path: plain}, wantErr: "not a mount point"},
		{name: "path outside class dir", req: Request{Kind: "d", MountDir: root, Path: "/etc"}, wantErr: "not a direct child"},
		{name: "class dir itself", req: Request{Kind: "d", MountDir: root, Path: root}, wantErr: "not a direct child"},
		{name: "nested path", req: Request{Kind: "d", MountDir: root, Path: filepath.Join(mounted, "x")}, wantErr: "not a direct child"},
		{name: "unclean path", req: Request{Kind: "d", MountDir: root, Path: root + "/x/../plain"}, wantErr: "not a direct child"},
		{name: "symlink to a mount", req: Request{Kind: "d", MountDir: root, Path: filepath.Join(root, "link")}, wantErr: "not a directory"},
		{name: "missing volume", req: Request{Kind: "d", MountDir: root, Path: filepath.Join(root, "gone")}, wantErr: "failed to stat"},
		{name: "unknown kind", req: Request{Kind: "x", MountDir: root, Path: plain}, wantErr: "unknown kind"},
		{name: "block without command", req: Request{Kind: "b", MountDir: root, Path: filepath.Join(root, "file")}, wantErr: "no block cleaner command"},
		{name: "block on a regular file", req: Request{Kind: "b", MountDir: root, Path: filepath.Join(root, "file"), Command: []string{"true"}}, wantErr: "not a block device"},
		{name: "block symlink to a directory", req: Request{Kind: "b", MountDir: root, Path: filepath.Join(root, "link"), Command: []string{"true"}}, wantErr: "outside /dev"},
	}
	_, ctx := ktesting.NewTestContext(t)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := newTestCleaner().Clean(ctx, tc.req)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("want error containing %q, got %v", tc.wantErr, err)
			}
		})
	}
	if b, _ := os.ReadFile(filepath.Join(plain, "f")); string(b) != "x" {
		t.Fatal("a refused request removed data")
	}
}

func TestCleanBlockRunsCommand(t *testing.T) {
	testutil.RequireRoot(t)
	dev := testutil.LoopDevice(t, 1<<20)
	root := t.TempDir()
	link := filepath.Join(root, "disk1")
	if err := os.Symlink(dev, link); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dev, bytes.Repeat([]byte{0xAA}, 1<<20), 0o600); err != nil {
		t.Fatal(err)
	}
	_, ctx := ktesting.NewTestContext(t)
	c := newTestCleaner()
	wipe := []string{"dd", "if=/dev/zero", "of=$(LOCAL_PV_BLKDEVICE)", "bs=64k", "count=16", "conv=fsync"}
	if err := c.Clean(ctx, Request{Kind: "b", MountDir: root, Path: link, Command: wipe}); err != nil {
		t.Fatalf("Clean: %v", err)
	}
	b, err := os.ReadFile(dev)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b, make([]byte, len(b))) {
		t.Fatal("device still holds old data")
	}
	fail := []string{"sh", "-c", `echo "cannot wipe $LOCAL_PV_BLKDEVICE" >&2; exit 3`}
	err = c.Clean(ctx, Request{Kind: "b", MountDir: root, Path: link, Command: fail})
	if err == nil || !strings.Contains(err.Error(), "cannot wipe "+CheckedDevice) {
		t.Fatalf("want failure with command output, got %v", err)
	}
}

func TestExpandCommand(t *testing.T) {
	got := ExpandCommand([]string{"blkdiscard", "--offset=0", "$(LOCAL_PV_BLKDEVICE)", "x$(LOCAL_PV_BLKDEVICE)y", "$(OTHER)"}, "/dev/sdb")
	want := []string{"blkdiscard", "--offset=0", "/dev/sdb", "x/dev/sdby", "$(OTHER)"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("got %q, want %q", got, want)
	}
}

func mustWrite(t *testing.T, p, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
