package wipe

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
	"k8s.io/klog/v2/ktesting"

	"github.com/nodeplug/nodeplug/pkg/localpv/discovery"
	"github.com/nodeplug/nodeplug/pkg/localpv/testutil"
)

// TestCleanDirectoryRefusesMountBelow: a real tmpfs mounted below the volume
// makes the clean fail before anything is removed, and says which mount.
func TestCleanDirectoryRefusesMountBelow(t *testing.T) {
	testutil.RequireRoot(t)
	vol := filepath.Join(t.TempDir(), "vol")
	testutil.MountTmpfs(t, vol, 1<<20)
	writeFiles(t, vol, "data", "sub/f")
	below := filepath.Join(vol, "sub", "mnt")
	testutil.MountTmpfs(t, below, 1<<20)
	writeFiles(t, below, "host-data")
	_, ctx := ktesting.NewTestContext(t)
	err := CleanDirectory(ctx, vol, discovery.SelfMountInfo)
	if err == nil || !strings.Contains(err.Error(), below+" is mounted below it") {
		t.Fatalf("want a refusal naming %s, got %v", below, err)
	}
	for _, f := range []string{"data", "sub/f", "sub/mnt/host-data"} {
		if _, err := os.Lstat(filepath.Join(vol, f)); err != nil {
			t.Errorf("a refused clean removed %s: %v", f, err)
		}
	}
}

// TestRemoveContentsNeverCrossesMounts runs the walk itself, as if a mount
// appeared after the mount table was read: a directory on another file
// system, a bind mount of a directory of the same file system (same st_dev)
// and a bind-mounted file are not entered or removed and fail the clean;
// every other entry is removed.
func TestRemoveContentsNeverCrossesMounts(t *testing.T) {
	testutil.RequireRoot(t)
	tests := []struct {
		name string
		// mount mounts something at target, whose contents outside holds.
		mount   func(t *testing.T, outside, target string)
		file    bool
		noAt2   bool
		wantErr error
	}{
		{name: "tmpfs below", mount: func(t *testing.T, outside, target string) {
			testutil.MountTmpfs(t, target, 1<<20)
			writeFiles(t, target, "keep")
		}, wantErr: ErrOtherFileSystem},
		{name: "bind mount of the same file system", mount: bindMount, wantErr: ErrOtherFileSystem},
		{name: "bind mount without openat2", mount: bindMount, noAt2: true, wantErr: ErrOtherFileSystem},
		{name: "bind-mounted file", mount: bindMount, file: true, wantErr: unix.EBUSY},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// One tmpfs holds the volume and the directory outside it, so
			// that a bind mount of outside has the volume's st_dev.
			base := t.TempDir()
			testutil.MountTmpfs(t, base, 4<<20)
			vol, outside := filepath.Join(base, "vol"), filepath.Join(base, "outside")
			writeFiles(t, vol, "data", "a/b/c", "sub/f")
			writeFiles(t, outside, "keep")
			target := filepath.Join(vol, "sub", "mnt")
			if tc.file {
				outside, target = filepath.Join(outside, "keep"), filepath.Join(vol, "sub", "mnt-file")
				writeFiles(t, vol, "sub/mnt-file")
			} else if err := os.Mkdir(target, 0o755); err != nil {
				t.Fatal(err)
			}
			tc.mount(t, outside, target)
			entries, failed, err := removeBelow(vol, !tc.noAt2)
			if !errors.Is(err, tc.wantErr) || !strings.Contains(err.Error(), target) {
				t.Fatalf("want an error wrapping %v naming %s, got %v", tc.wantErr, target, err)
			}
			if entries != 3 || failed != 1 {
				t.Errorf("entries %d, failed %d; want 3 and 1 (sub)", entries, failed)
			}
			for _, gone := range []string{"data", "a", "sub/f"} {
				if _, err := os.Lstat(filepath.Join(vol, gone)); !errors.Is(err, fs.ErrNotExist) {
					t.Errorf("%s was not removed: %v", gone, err)
				}
			}
			kept := filepath.Join(target, "keep")
			if tc.file {
				kept = target
			}
			if b, err := os.ReadFile(kept); err != nil || string(b) != "data" {
				t.Errorf("what is mounted below the volume was touched: %q, %v", b, err)
			}
		})
	}
}

// TestRemoveContentsKeepsSymlinkTargets: a symlink to a directory and one to
// a file outside the volume are removed, not followed.
func TestRemoveContentsKeepsSymlinkTargets(t *testing.T) {
	base := t.TempDir()
	vol, outside := filepath.Join(base, "vol"), filepath.Join(base, "outside")
	writeFiles(t, vol, "data", "deep/er/f")
	writeFiles(t, outside, "keep")
	for name, target := range map[string]string{"dirlink": outside, "filelink": filepath.Join(outside, "keep"), "dangling": "/nonexistent"} {
		if err := os.Symlink(target, filepath.Join(vol, "deep", name)); err != nil {
			t.Fatal(err)
		}
	}
	entries, failed, err := removeContents(vol)
	if err != nil || entries != 2 || failed != 0 {
		t.Fatalf("removeContents = %d, %d, %v; want 2 entries removed", entries, failed, err)
	}
	if left, err := os.ReadDir(vol); err != nil || len(left) != 0 {
		t.Errorf("volume holds %v (%v)", left, err)
	}
	if b, err := os.ReadFile(filepath.Join(outside, "keep")); err != nil || string(b) != "data" {
		t.Errorf("a symlink target was touched: %q, %v", b, err)
	}
}

func bindMount(t *testing.T, source, target string) {
	t.Helper()
	if err := unix.Mount(source, target, "", unix.MS_BIND, ""); err != nil {
		t.Fatalf("bind mount %s on %s: %v", source, target, err)
	}
	t.Cleanup(func() {
		if err := unix.Unmount(target, unix.MNT_DETACH); err != nil {
			t.Errorf("failed to unmount %s: %v", target, err)
		}
	})
}

// writeFiles creates each file (a path below dir) holding "data".
func writeFiles(t *testing.T, dir string, files ...string) {
	t.Helper()
	for _, f := range files {
		p := filepath.Join(dir, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("data"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
