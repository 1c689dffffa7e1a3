package executor

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/nodeplug/nodeplug/pkg/kubelet/pluginwatcher/socket"
)

// shortDir returns a directory under /tmp: unix socket paths are limited
// to 108 bytes, which t.TempDir() can exceed.
func shortDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("/tmp", "pwx")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	return dir
}

// deadSocket leaves a socket file at path that nobody listens on, as a
// plugin that crashed does.
func deadSocket(t *testing.T, path string) {
	t.Helper()
	lis, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	lis.SetUnlinkOnClose(false)
	_ = lis.Close()
}

// TestProbeClassifiesDialErrors: a socket without a listener is refused, a
// missing file is gone, so that the reconciler can tell a stale socket from
// one that is slow.
func TestProbeClassifiesDialErrors(t *testing.T) {
	dir := shortDir(t)
	dead := filepath.Join(dir, "dead.sock")
	deadSocket(t, dead)
	e := New(200*time.Millisecond, 200*time.Millisecond)
	for name, tc := range map[string]struct {
		path string
		want error
	}{
		"no listener":  {dead, ErrRefused},
		"missing file": {filepath.Join(dir, "missing.sock"), ErrGone},
	} {
		t.Run(name, func(t *testing.T) {
			_, conn, err := e.Probe(context.Background(), tc.path)
			if !errors.Is(err, tc.want) || conn != nil {
				t.Errorf("Probe(%s) = (%v, %v), want an error wrapping %v", tc.path, conn, err, tc.want)
			}
		})
	}
}

// TestRemoveStaleOnlyRemovesTheSameSocket: a socket replaced since it was
// found stale (another inode) is kept.
func TestRemoveStaleOnlyRemovesTheSameSocket(t *testing.T) {
	path := filepath.Join(shortDir(t), "p.sock")
	deadSocket(t, path)
	id, _, err := socket.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	e := New(time.Second, time.Second)
	if removed, err := e.RemoveStale(path, socket.ID{Dev: id.Dev, Ino: id.Ino + 1, Ctime: id.Ctime}); removed || err != nil {
		t.Fatalf("RemoveStale of another inode = (%v, %v), want (false, nil)", removed, err)
	}
	if _, err := os.Lstat(path); err != nil {
		t.Fatalf("socket of another inode removed: %v", err)
	}
	if removed, err := e.RemoveStale(path, id); !removed || err != nil {
		t.Fatalf("RemoveStale = (%v, %v), want (true, nil)", removed, err)
	}
	if _, err := os.Lstat(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("stale socket still there: %v", err)
	}
}
