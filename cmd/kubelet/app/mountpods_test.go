//go:build !nodeplug_no_mountpods

package app

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/nodeplug/nodeplug/pkg/util/testutil"
)

// TestEnsureSharedRoot: a root dir on a private mount becomes a shared
// mount point; run again, it stays one (no second bind mount).
func TestEnsureSharedRoot(t *testing.T) {
	testutil.RequireMount(t)
	base := t.TempDir()
	if err := unix.Mount("tmpfs", base, "tmpfs", 0, "size=1m"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Unmount(base, unix.MNT_DETACH) })
	if err := unix.Mount("", base, "", unix.MS_PRIVATE, ""); err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(base, "kubelet")
	t.Cleanup(func() { unix.Unmount(root, unix.MNT_DETACH) })
	for i := range 2 {
		if err := ensureSharedRoot(root); err != nil {
			t.Fatal(err)
		}
		if n, shared := mountinfo(t, root); n != 1 || !shared {
			t.Fatalf("run %d: %d mounts at %s, shared=%v", i, n, root, shared)
		}
	}
}

// mountinfo returns how many mounts sit at path and whether the top one is
// shared.
func mountinfo(t *testing.T, path string) (n int, shared bool) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) > 6 && fields[4] == path {
			n++
			shared = strings.Contains(strings.Join(fields[6:], " "), "shared:")
		}
	}
	return n, shared
}
