//go:build linux

package identity

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/nodeplug/nodeplug/pkg/util/testutil"
)

// TestDirectory reads identities on real tmpfs mounts: a directory keeps its
// identity, another directory or the same path on a new mount differs.
func TestDirectory(t *testing.T) {
	testutil.RequireMount(t)
	root := t.TempDir()
	mount := func() {
		if err := unix.Mount("tmpfs", root, "tmpfs", 0, "size=1m"); err != nil {
			t.Fatalf("mount tmpfs: %v", err)
		}
		for _, d := range []string{"a", "b"} {
			if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
				t.Fatal(err)
			}
		}
	}
	mount()
	t.Cleanup(func() { _ = unix.Unmount(root, unix.MNT_DETACH) })
	read := func(p string) ID {
		t.Helper()
		id, err := Directory(filepath.Join(root, p))
		if err != nil {
			t.Fatal(err)
		}
		if err := id.Valid(); err != nil {
			t.Fatal(err)
		}
		return id
	}
	a, b := read("a"), read("b")
	t.Logf("a: %s, b: %s", a, b)
	if a2 := read("a"); a2 != a {
		t.Errorf("identity of one directory changed: %q then %q", a, a2)
	}
	if Compare(a, b) != Different {
		t.Errorf("two directories compare %v: %q, %q", Compare(a, b), a, b)
	}
	if err := unix.Unmount(root, 0); err != nil {
		t.Fatal(err)
	}
	mount()
	if again := read("a"); Compare(a, again) == Same {
		t.Errorf("a directory on a new file system kept the identity %q", a)
	}
	if _, err := Directory(filepath.Join(root, "missing")); err == nil {
		t.Error("a missing directory has an identity")
	}
}
