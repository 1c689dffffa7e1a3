package exec

import (
	"bytes"
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	utilexec "k8s.io/utils/exec"

	"github.com/nodeplug/nodeplug/pkg/mountpod"
)

// fakeCRI answers ExecSync like a runtime: argv[0] picks the behaviour.
type fakeCRI struct {
	runtimeapi.UnimplementedRuntimeServiceServer
	lastTimeout int64
}

func (f *fakeCRI) ExecSync(ctx context.Context, req *runtimeapi.ExecSyncRequest) (*runtimeapi.ExecSyncResponse, error) {
	f.lastTimeout = req.Timeout
	switch req.Cmd[0] {
	case "echo":
		return &runtimeapi.ExecSyncResponse{Stdout: []byte(strings.Join(req.Cmd[1:], " ")), Stderr: []byte("warn")}, nil
	case "fsck":
		return &runtimeapi.ExecSyncResponse{Stdout: []byte("errors left"), ExitCode: 4}, nil
	case "chatty":
		return &runtimeapi.ExecSyncResponse{Stdout: bytes.Repeat([]byte("x"), 3<<20)}, nil
	case "hang":
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return nil, errors.New("no such container")
}

// shortDir returns a temp dir short enough for a unix socket path.
func shortDir(t *testing.T) string {
	d, err := os.MkdirTemp("/tmp", "np-cri-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	return d
}

func serveCRI(t *testing.T, srv *fakeCRI) string {
	sock := filepath.Join(shortDir(t), "cri.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	s := grpc.NewServer()
	runtimeapi.RegisterRuntimeServiceServer(s, srv)
	go s.Serve(l)
	t.Cleanup(s.Stop)
	return "unix://" + sock
}

var target = mountpod.Target{Namespace: "kube-mount", Name: "mp", Container: "utilities", ContainerID: "c1"}

func TestCRIExecutor(t *testing.T) {
	srv := &fakeCRI{}
	e, err := NewCRIExecutor(serveCRI(t, srv), 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	cases := map[string]struct {
		argv            []string
		timeout         time.Duration
		wantOut         string
		wantCode        int
		wantErr         error
		wantTimeoutSecs int64
	}{
		"output and stderr":         {argv: []string{"echo", "a", "b"}, wantOut: "a b", timeout: 1500 * time.Millisecond, wantTimeoutSecs: 2},
		"fsck exit code kept":       {argv: []string{"fsck"}, wantOut: "errors left", wantCode: 4},
		"output over bound":         {argv: []string{"chatty"}, wantErr: ErrOutputTooLarge},
		"zero timeout gets default": {argv: []string{"echo"}, wantTimeoutSecs: int64(DefaultTimeout.Seconds())},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			out, _, err := e.ExecInPod(context.Background(), target, tc.argv, tc.timeout)
			var ee utilexec.ExitError
			switch {
			case tc.wantErr != nil:
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("err %v, want %v", err, tc.wantErr)
				}
				if len(out) != 1<<20 {
					t.Fatalf("output cut at %d, want %d", len(out), 1<<20)
				}
			case tc.wantCode != 0:
				if !errors.As(err, &ee) || ee.ExitStatus() != tc.wantCode {
					t.Fatalf("err %v, want exit code %d", err, tc.wantCode)
				}
			case err != nil:
				t.Fatal(err)
			}
			if tc.wantOut != "" && string(out) != tc.wantOut {
				t.Fatalf("stdout %q, want %q", out, tc.wantOut)
			}
			if tc.wantTimeoutSecs != 0 && srv.lastTimeout != tc.wantTimeoutSecs {
				t.Fatalf("request timeout %d s, want %d", srv.lastTimeout, tc.wantTimeoutSecs)
			}
		})
	}
}

// TestCRIExecutorHostilePeers: a runtime that never answers, and a socket
// that accepts and never speaks, both end at the timeout plus grace.
func TestCRIExecutorHostilePeers(t *testing.T) {
	silent := filepath.Join(shortDir(t), "silent.sock")
	l, err := net.Listen("unix", silent)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			defer c.Close() // held open, never answered
		}
	}()
	cases := map[string]string{
		"runtime never answers ExecSync": serveCRI(t, &fakeCRI{}),
		"socket accepts, never speaks":   "unix://" + silent,
	}
	for name, endpoint := range cases {
		t.Run(name, func(t *testing.T) {
			e, err := NewCRIExecutor(endpoint, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer e.Close()
			e.grace = 200 * time.Millisecond
			start := time.Now()
			_, _, err = e.ExecInPod(context.Background(), target, []string{"hang"}, time.Second)
			if !errors.Is(err, ErrTimeout) {
				t.Fatalf("err %v, want ErrTimeout", err)
			}
			if took := time.Since(start); took > 5*time.Second {
				t.Fatalf("returned after %v", took)
			}
		})
	}
}

func TestNewCRIExecutorEndpoint(t *testing.T) {
	if _, err := NewCRIExecutor("tcp://127.0.0.1:1", 0); err == nil || !strings.Contains(err.Error(), "unix") {
		t.Fatalf("err %v, want unix-only error", err)
	}
	e, err := NewCRIExecutor("/run/x.sock", 0)
	if err != nil {
		t.Fatal(err)
	}
	e.Close()
}
