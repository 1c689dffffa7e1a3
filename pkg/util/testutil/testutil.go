package testutil

import (
	"os"
	"os/exec"
	"testing"

	"golang.org/x/sys/unix"
)

// CIEnv is the environment variable that marks a CI run when it is "true".
const CIEnv = "CI"

// CI reports whether the tests run in CI (CI=true).
func CI() bool { return os.Getenv(CIEnv) == "true" }

// MissingCapability ends a test that cannot run on this machine for want of
// a capability (root, a mount, a loop device, a command): it fails under
// CI=true and skips otherwise. The message says what is missing.
func MissingCapability(t testing.TB, format string, args ...any) {
	t.Helper()
	if CI() {
		t.Fatalf("CI=true, so this test fails instead of skipping: "+format, args...)
		return
	}
	t.Skipf(format, args...)
}

// RequireRoot ends the test through MissingCapability unless it runs as
// root.
func RequireRoot(t testing.TB) {
	t.Helper()
	if euid := os.Geteuid(); euid != 0 {
		MissingCapability(t, "needs root to mount (euid is %d)", euid)
	}
}

// RequireMount ends the test through MissingCapability unless it runs as
// root and may mount: it mounts and unmounts a small tmpfs on a temporary
// directory (a container without CAP_SYS_ADMIN is root but cannot mount).
func RequireMount(t testing.TB) {
	t.Helper()
	if euid := os.Geteuid(); euid != 0 {
		MissingCapability(t, "needs root to mount (euid is %d)", euid)
		return
	}
	dir := t.TempDir()
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "size=1m"); err != nil {
		MissingCapability(t, "cannot mount a tmpfs on %s: %v", dir, err)
		return
	}
	if err := unix.Unmount(dir, 0); err != nil {
		t.Fatalf("failed to unmount the test tmpfs on %s: %v", dir, err)
	}
}

// RequireCommand ends the test through MissingCapability unless every
// command is in $PATH.
func RequireCommand(t testing.TB, names ...string) {
	t.Helper()
	for _, name := range names {
		if _, err := exec.LookPath(name); err != nil {
			MissingCapability(t, "needs %s: %v", name, err)
			return
		}
	}
}
