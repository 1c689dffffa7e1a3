package podexec

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nodeplug/nodeplug/pkg/mountpod"
)

// Defaults.
const (
	// DefaultTimeout bounds a mount utility (mount, umount, mkfs, fsck,
	// blkid) in a pod that has no deadline of its own (Options.Timeout,
	// the kubelet's --experimental-mount-pod-exec-timeout). Formatting a
	// large disk can take minutes. Flexvolume driver calls get none of
	// their own: their bound is the driver call's (upstream sets none but
	// for waitforattach).
	DefaultTimeout = 10 * time.Minute
	// DefaultMaxOutputBytes bounds each output stream of a command in a pod.
	DefaultMaxOutputBytes = 4 << 20
)

// PodExecutor runs one command in a container and returns its output. A
// timeout of 0 sets none: the command runs until it ends or ctx does.
// A command that ran and exited non-zero returns a
// k8s.io/utils/exec.CodeExitError with the exit code, and its output.
type PodExecutor interface {
	ExecInPod(ctx context.Context, t mountpod.Target, argv []string, timeout time.Duration) (stdout, stderr []byte, err error)
}

// Errors callers may test with errors.Is.
var (
	// ErrUnsupported: the command asked for something a pod exec cannot do.
	ErrUnsupported = errors.New("not supported for commands in a mount pod")
	// ErrTimeout: the command did not finish in time.
	ErrTimeout = errors.New("command in mount pod timed out")
	// ErrOutputTooLarge: an output stream exceeded its bound; the output
	// returned is cut at the bound.
	ErrOutputTooLarge = errors.New("command output too large")
)

// timeoutFor returns the timeout for a call: ctx's deadline if sooner than
// def (or def is 0, none), else def.
func timeoutFor(ctx context.Context, def time.Duration) time.Duration {
	if dl, ok := ctx.Deadline(); ok {
		if left := time.Until(dl); def <= 0 || left < def {
			return max(left, time.Millisecond)
		}
	}
	return max(def, 0)
}

// withTimeout is context.WithTimeout, or WithCancel for a timeout of 0.
func withTimeout(ctx context.Context, timeout time.Duration) (context.Context, context.CancelFunc) {
	if timeout <= 0 {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, timeout)
}

// capOutput cuts b at limit and reports whether it did.
func capOutput(b []byte, limit int) ([]byte, bool) {
	if limit > 0 && len(b) > limit {
		return b[:limit], true
	}
	return b, false
}

// outputError returns the error for streams cut at limit, or nil.
func outputError(t mountpod.Target, limit int, cut ...bool) error {
	for _, c := range cut {
		if c {
			return fmt.Errorf("%w: more than %d bytes per stream from %s", ErrOutputTooLarge, limit, t)
		}
	}
	return nil
}
