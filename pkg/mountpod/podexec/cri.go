package podexec

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	utilexec "k8s.io/utils/exec"

	"github.com/nodeplug/nodeplug/pkg/mountpod"
)

// criGrace is how long past a command's own timeout the call may take:
// the runtime needs time to kill the process and answer.
const criGrace = 10 * time.Second

// criMaxMessage lets a response with two 16 MiB streams (the CRI's bound)
// decode, so that the size is checked here with a clear error.
const criMaxMessage = 40 << 20

// CRIExecutor runs commands with the CRI's ExecSync on the container
// runtime's endpoint, as the kubelet does for exec probes.
type CRIExecutor struct {
	conn      *grpc.ClientConn
	client    runtimeapi.RuntimeServiceClient
	maxOutput int
	grace     time.Duration
}

var _ PodExecutor = &CRIExecutor{}

// NewCRIExecutor returns an executor for endpoint ("unix:///run/x.sock" or
// a plain socket path). The connection is made on first use. maxOutput
// bounds each stream (DefaultMaxOutputBytes when zero).
func NewCRIExecutor(endpoint string, maxOutput int) (*CRIExecutor, error) {
	target := endpoint
	if !strings.Contains(target, "://") {
		target = "unix://" + target
	}
	if !strings.HasPrefix(target, "unix://") {
		return nil, fmt.Errorf("container runtime endpoint %q: only unix sockets are supported", endpoint)
	}
	conn, err := grpc.NewClient(target, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(criMaxMessage)))
	if err != nil {
		return nil, fmt.Errorf("container runtime endpoint %q: %w", endpoint, err)
	}
	if maxOutput <= 0 {
		maxOutput = DefaultMaxOutputBytes
	}
	return &CRIExecutor{conn: conn, client: runtimeapi.NewRuntimeServiceClient(conn), maxOutput: maxOutput, grace: criGrace}, nil
}

// Close closes the connection.
func (e *CRIExecutor) Close() error { return e.conn.Close() }

// ExecInPod implements PodExecutor. The CRI takes whole seconds, so the
// timeout is rounded up; the call itself ends criGrace after it. A timeout
// of 0 sets none, for the runtime and the call (it ends with ctx).
func (e *CRIExecutor) ExecInPod(ctx context.Context, t mountpod.Target, argv []string, timeout time.Duration) ([]byte, []byte, error) {
	secs := int64(math.Ceil(max(timeout, 0).Seconds()))
	callTimeout := time.Duration(secs)*time.Second + e.grace
	if secs == 0 {
		callTimeout = 0
	}
	cctx, cancel := withTimeout(ctx, callTimeout)
	defer cancel()
	start := time.Now()
	id, err := e.resolve(cctx, t)
	if err != nil {
		return nil, nil, callError(ctx, err, start, timeout, argv[0], t)
	}
	resp, err := e.client.ExecSync(cctx, &runtimeapi.ExecSyncRequest{ContainerId: id, Cmd: argv, Timeout: secs})
	if err != nil {
		return nil, nil, callError(ctx, fmt.Errorf("CRI ExecSync of %q in %s: %w", argv[0], t, err), start, timeout, argv[0], t)
	}
	stdout, cutOut := capOutput(resp.Stdout, e.maxOutput)
	stderr, cutErr := capOutput(resp.Stderr, e.maxOutput)
	if err := outputError(t, e.maxOutput, cutOut, cutErr); err != nil {
		return stdout, stderr, err
	}
	if resp.ExitCode != 0 {
		return stdout, stderr, utilexec.CodeExitError{
			Err:  fmt.Errorf("%q in %s exited with %d", argv[0], t, resp.ExitCode),
			Code: int(resp.ExitCode),
		}
	}
	return stdout, stderr, nil
}

// callError classifies a failed CRI call: the caller's context ended, the
// command's timeout passed, or another error.
func callError(ctx context.Context, err error, start time.Time, timeout time.Duration, cmd string, t mountpod.Target) error {
	if status.Code(err) == codes.DeadlineExceeded || (timeout > 0 && time.Since(start) >= timeout) {
		if ctx.Err() != nil {
			return fmt.Errorf("%q in %s: %w", cmd, t, ctx.Err())
		}
		return fmt.Errorf("%w: %q in %s after %v: %w", ErrTimeout, cmd, t, timeout, err)
	}
	return err
}

// IsTimeout reports whether err is a timeout of a command in a pod.
func IsTimeout(err error) bool { return errors.Is(err, ErrTimeout) }
