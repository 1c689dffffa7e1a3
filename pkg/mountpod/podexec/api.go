package podexec

import (
	"context"
	"errors"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/remotecommand"
	"k8s.io/streaming/pkg/httpstream"
	utilexec "k8s.io/utils/exec"

	"github.com/nodeplug/nodeplug/pkg/mountpod"
	"github.com/nodeplug/nodeplug/pkg/util/cappedbuf"
)

// StreamExecutorFactory makes the remotecommand executor for one request
// URL. Tests replace it with a fake; NewAPIExecutor's default speaks
// WebSocket and falls back to SPDY.
type StreamExecutorFactory func(config *rest.Config, req *rest.Request) (remotecommand.Executor, error)

// APIExecutor runs commands through the API server's pods/exec
// subresource, for processes that are not on the pod's node (the
// controller-manager). It needs RBAC create on pods/exec in the mount
// namespace.
type APIExecutor struct {
	config    *rest.Config
	rest      rest.Interface
	newStream StreamExecutorFactory
	maxOutput int
}

var _ PodExecutor = &APIExecutor{}

// NewAPIExecutor returns an executor that uses config. restClient is the
// core/v1 REST client (clientset.CoreV1().RESTClient()); newStream may be
// nil for the default. maxOutput bounds each stream.
func NewAPIExecutor(config *rest.Config, restClient rest.Interface, newStream StreamExecutorFactory, maxOutput int) *APIExecutor {
	if newStream == nil {
		newStream = defaultStreamExecutor
	}
	if maxOutput <= 0 {
		maxOutput = DefaultMaxOutputBytes
	}
	return &APIExecutor{config: config, rest: restClient, newStream: newStream, maxOutput: maxOutput}
}

func defaultStreamExecutor(config *rest.Config, req *rest.Request) (remotecommand.Executor, error) {
	ws, err := remotecommand.NewWebSocketExecutor(config, "GET", req.URL().String())
	if err != nil {
		return nil, err
	}
	spdy, err := remotecommand.NewSPDYExecutor(config, "POST", req.URL())
	if err != nil {
		return nil, err
	}
	return remotecommand.NewFallbackExecutor(ws, spdy, fallBackToSPDY)
}

// fallBackToSPDY tells whether a WebSocket exec failed in a way SPDY may
// not. The error types come from k8s.io/streaming, the package client-go's
// executors use: apimachinery's deprecated httpstream declares a type of
// the same name that their errors never match.
func fallBackToSPDY(err error) bool {
	return httpstream.IsUpgradeFailure(err) || httpstream.IsHTTPSProxyError(err)
}

// ExecInPod implements PodExecutor. A timeout of 0 sets none (the call ends
// with ctx).
func (e *APIExecutor) ExecInPod(ctx context.Context, t mountpod.Target, argv []string, timeout time.Duration) ([]byte, []byte, error) {
	cctx, cancel := withTimeout(ctx, timeout)
	defer cancel()
	req := e.rest.Post().Resource("pods").Namespace(t.Namespace).Name(t.Name).SubResource("exec").
		VersionedParams(&v1.PodExecOptions{Container: t.Container, Command: argv, Stdout: true, Stderr: true}, scheme.ParameterCodec)
	stream, err := e.newStream(e.config, req)
	if err != nil {
		return nil, nil, fmt.Errorf("pods/exec of %q in %s: %w", argv[0], t, err)
	}
	stdout, stderr := cappedbuf.New(e.maxOutput, cappedbuf.Discard), cappedbuf.New(e.maxOutput, cappedbuf.Discard)
	err = stream.StreamWithContext(cctx, remotecommand.StreamOptions{Stdout: stdout, Stderr: stderr})
	out, errOut := stdout.Bytes(), stderr.Bytes()
	if oerr := outputError(t, e.maxOutput, stdout.Truncated(), stderr.Truncated()); oerr != nil {
		return out, errOut, oerr
	}
	var status interface{ ExitStatus() int }
	switch {
	case err == nil:
		return out, errOut, nil
	case errors.As(err, &status):
		return out, errOut, utilexec.CodeExitError{
			Err:  fmt.Errorf("%q in %s exited with %d", argv[0], t, status.ExitStatus()),
			Code: status.ExitStatus(),
		}
	case cctx.Err() != nil && ctx.Err() == nil:
		return out, errOut, fmt.Errorf("%w: %q in %s after %v", ErrTimeout, argv[0], t, timeout)
	}
	return out, errOut, fmt.Errorf("pods/exec of %q in %s: %w", argv[0], t, err)
}
