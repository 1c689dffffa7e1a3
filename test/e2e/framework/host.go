//go:build e2e

package framework

import (
	"context"
	"os/exec"
	"strings"
	"testing"
)

// Run runs name with args on the host (Node.Run runs in a node) and
// returns its combined output, failing t with that output when it fails.
func Run(ctx context.Context, t testing.TB, name string, args ...string) string {
	t.Helper()
	out, err := exec.CommandContext(ctx, name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// AttachLoop attaches the image file img to a free loop device on the host
// and returns the device; detaching it (losetup -d) is the caller's. On an
// existing cluster it skips t: the nodes do not see the host's devices.
func AttachLoop(t testing.TB, img string) string {
	t.Helper()
	if clusterModeFromEnv() == ModeExisting {
		t.Skip(LocalHostSkipPrefix + "a loop device the nodes see")
	}
	out, err := exec.Command("losetup", "-f", "--show", img).CombinedOutput()
	if err != nil {
		t.Fatalf("losetup %s: %v: %s", img, err, out)
	}
	return strings.TrimSpace(string(out))
}
