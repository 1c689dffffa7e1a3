//go:build e2e

package framework

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// NodeVisible returns a path of the executable bin that every node sees:
// bin itself when it lies below the cluster or binary directory (which
// each node sees at the same path), else a copy in the cluster directory
// (a binary built under /tmp is hidden in a node that mounts its own /tmp).
func (c *Cluster) NodeVisible(t testing.TB, bin string) string {
	t.Helper()
	c.RequireLocalHost(t, "a binary copied where the nodes see it")
	for _, dir := range []string{c.dir, c.BinDir} {
		if strings.HasPrefix(bin, dir+"/") {
			return bin
		}
	}
	copiesMu.Lock()
	defer copiesMu.Unlock()
	if dst, ok := copies[bin]; ok {
		return dst
	}
	dir := filepath.Join(c.dir, "e2e-bin")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	src, err := os.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dst := filepath.Join(dir, filepath.Base(bin))
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(bin))
	if err != nil {
		t.Fatal(err)
	}
	_, err = io.Copy(tmp, src)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp.Name(), 0o755)
	}
	if err == nil {
		err = os.Rename(tmp.Name(), dst)
	}
	if err != nil {
		_ = os.Remove(tmp.Name())
		t.Fatalf("copy %s to %s: %v", bin, dst, err)
	}
	copies[bin] = dst
	return dst
}

// copies are the binaries NodeVisible copied, by source path: a test
// binary starts itself on nodes many times.
var (
	copiesMu sync.Mutex
	copies   = map[string]string{}
)

// StartProcess starts bin (see NodeVisible) on node n with args and extra
// environment, as a daemon of the node would run. It is stopped with
// SIGTERM (SIGKILL after 10 s) when t ends or when the returned func is
// called, and its output is logged if t failed.
func (n *Node) StartProcess(t testing.TB, bin string, args []string, env ...string) (stop func()) {
	t.Helper()
	stop, _ = n.StartLogged(t, bin, args, env...)
	return stop
}

// StartLogged is StartProcess that also returns the process's output
// (stdout and stderr), which the test may read while it runs.
func (n *Node) StartLogged(t testing.TB, bin string, args []string, env ...string) (stop func(), out fmt.Stringer) {
	t.Helper()
	n.requireLocalHost(t, "a process started in the node's namespaces")
	bin = n.c.NodeVisible(t, bin)
	cmd := n.DaemonCommand(t, bin, args...)
	cmd.Env = append(os.Environ(), env...)
	buf := &lockedBuffer{}
	cmd.Stdout, cmd.Stderr = buf, buf
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s on node %s: %v", bin, n.Name, err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	pid, err := n.DaemonPID(ctx, cmd)
	if err != nil {
		_ = cmd.Process.Kill()
		t.Fatal(err)
	}
	var once sync.Once
	stop = func() {
		once.Do(func() {
			// The process itself: nsenter does not pass signals on.
			_ = syscall.Kill(pid, syscall.SIGTERM)
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				_ = syscall.Kill(pid, syscall.SIGKILL)
				<-done
			}
		})
	}
	t.Cleanup(func() {
		stop()
		if t.Failed() {
			t.Logf("%s on node %s, output:\n%s", filepath.Base(bin), n.Name, buf.String())
		}
	})
	return stop, buf
}

type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
