package podexec

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
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	utilexec "k8s.io/utils/exec"

	"github.com/nodeplug/nodeplug/pkg/mountpod"
)

// fakeCRI answers ExecSync like a runtime: argv[0] picks the behaviour.
// Its containers default to the target's; ignoreFilter makes ListContainers
// answer every container, as a runtime that ignores the label filter.
type fakeCRI struct {
	runtimeapi.UnimplementedRuntimeServiceServer
	lastTimeout  int64
	lastID       string
	containers   []*runtimeapi.Container
	ignoreFilter bool
}

func criContainer(id, uid, ns, pod, name string) *runtimeapi.Container {
	return &runtimeapi.Container{Id: id, State: runtimeapi.ContainerState_CONTAINER_RUNNING, Labels: map[string]string{
		criLabelPodUID: uid, criLabelPodNamespace: ns, criLabelPodName: pod, criLabelContainerName: name}}
}

func (f *fakeCRI) ListContainers(_ context.Context, req *runtimeapi.ListContainersRequest) (*runtimeapi.ListContainersResponse, error) {
	all := f.containers
	if all == nil {
		all = []*runtimeapi.Container{criContainer("c1", string(target.UID), target.Namespace, target.Name, target.Container)}
	}
	var out []*runtimeapi.Container
	for _, c := range all {
		match := f.ignoreFilter || req.GetFilter().GetState() == nil || c.State == req.GetFilter().GetState().GetState()
		for k, v := range req.GetFilter().GetLabelSelector() {
			match = match && (f.ignoreFilter || c.Labels[k] == v)
		}
		if match {
			out = append(out, c)
		}
	}
	return &runtimeapi.ListContainersResponse{Containers: out}, nil
}

func (f *fakeCRI) ExecSync(ctx context.Context, req *runtimeapi.ExecSyncRequest) (*runtimeapi.ExecSyncResponse, error) {
	f.lastTimeout, f.lastID = req.Timeout, req.ContainerId
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

var target = mountpod.Target{Namespace: "kube-mount", Name: "mp", UID: "uid-mp", Container: "utilities", ContainerID: "c1"}

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
		"output and stderr":      {argv: []string{"echo", "a", "b"}, wantOut: "a b", timeout: 1500 * time.Millisecond, wantTimeoutSecs: 2},
		"fsck exit code kept":    {argv: []string{"fsck"}, wantOut: "errors left", wantCode: 4},
		"output over bound":      {argv: []string{"chatty"}, wantErr: ErrOutputTooLarge},
		"zero timeout sets none": {argv: []string{"echo"}, wantTimeoutSecs: -1},
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
			if tc.wantTimeoutSecs != 0 && srv.lastTimeout != max(tc.wantTimeoutSecs, 0) {
				t.Fatalf("request timeout %d s, want %d", srv.lastTimeout, tc.wantTimeoutSecs)
			}
		})
	}
}

// TestCRIExecutorResolvesThroughRuntime: the container is the runtime's
// running container of the pod's UID and container name; an API status
// that names another container (a patched pods/status) is refused, and the
// command never reaches that container.
func TestCRIExecutorResolvesThroughRuntime(t *testing.T) {
	mine := criContainer("c1", "uid-mp", "kube-mount", "mp", "utilities")
	other := criContainer("victim", "uid-app", "default", "app", "app")
	restarted := criContainer("c2", "uid-mp", "kube-mount", "mp", "utilities")
	cases := map[string]struct {
		containers   []*runtimeapi.Container
		ignoreFilter bool
		target       mountpod.Target
		wantID       string
		wantErr      string
		wantMismatch bool
	}{
		"status and runtime agree": {containers: []*runtimeapi.Container{mine, other}, target: target, wantID: "c1"},
		"status names another pod's container": {containers: []*runtimeapi.Container{mine, other},
			target: withID(target, "victim"), wantMismatch: true},
		"status names a container the runtime does not run": {containers: []*runtimeapi.Container{mine},
			target: withID(target, "gone"), wantMismatch: true},
		"runtime ignores the filter": {containers: []*runtimeapi.Container{other, mine}, ignoreFilter: true,
			target: withID(target, "victim"), wantMismatch: true},
		"no running container of the pod": {containers: []*runtimeapi.Container{other}, target: target,
			wantErr: "no running container"},
		"two running containers of the pod and name": {containers: []*runtimeapi.Container{mine, restarted}, target: target,
			wantErr: "2 running containers"},
		"no UID to resolve": {containers: []*runtimeapi.Container{mine}, target: withUID(target, ""),
			wantErr: "no pod UID"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			srv := &fakeCRI{containers: tc.containers, ignoreFilter: tc.ignoreFilter}
			e, err := NewCRIExecutor(serveCRI(t, srv), 0)
			if err != nil {
				t.Fatal(err)
			}
			defer e.Close()
			_, _, err = e.ExecInPod(context.Background(), tc.target, []string{"echo", "secret"}, time.Second)
			switch {
			case tc.wantMismatch && !errors.Is(err, ErrContainerMismatch):
				t.Fatalf("err %v, want ErrContainerMismatch", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("err %v, want %q", err, tc.wantErr)
			case tc.wantID != "" && (err != nil || srv.lastID != tc.wantID):
				t.Fatalf("ran in %q (%v), want %q", srv.lastID, err, tc.wantID)
			case tc.wantID == "" && srv.lastID != "":
				t.Fatalf("the command reached container %q", srv.lastID)
			}
		})
	}
}

func withID(t mountpod.Target, id string) mountpod.Target   { t.ContainerID = id; return t }
func withUID(t mountpod.Target, uid string) mountpod.Target { t.UID = types.UID(uid); return t }

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
