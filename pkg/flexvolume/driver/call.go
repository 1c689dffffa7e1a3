package driver

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	osexec "os/exec"
	"syscall"
	"time"

	"k8s.io/klog/v2"
	utilexec "k8s.io/utils/exec"

	"github.com/nodeplug/nodeplug/pkg/util/cappedbuf"
)

// Call implements Driver.
func (d *driver) Call(ctx context.Context, cmd Command, timeout time.Duration, args ...string) (*Response, error) {
	if d.isUnsupported(cmd) {
		return nil, &CallError{ExecPath: d.execPath, Command: cmd, Status: StatusNotSupported, ExitCode: -1, Err: ErrNotSupported}
	}
	if timeout <= 0 {
		timeout = d.cfg.CallTimeout
		if cmd == CmdInit {
			timeout = d.cfg.InitTimeout
		}
	}
	logger := klog.FromContext(ctx)
	logger.V(4).Info("Calling flexvolume driver", "execPath", d.execPath, "command", cmd, "timeout", timeout)
	start := time.Now()
	res := d.run(ctx, timeout, append([]string{string(cmd)}, args...))
	r, err := d.interpret(cmd, timeout, res)
	logger.V(4).Info("Flexvolume driver call finished", "execPath", d.execPath, "command", cmd,
		"duration", time.Since(start), "err", err)
	return r, err
}

// runResult is what one execution produced.
type runResult struct {
	stdout, stderr []byte
	err            error
	timedOut       bool
	canceled       bool
	tooLarge       bool
}

// run executes the driver once. It returns at the latest KillGrace after the
// timeout (0: none, the call ends with ctx), even when the runner cannot
// reap the process.
func (d *driver) run(ctx context.Context, timeout time.Duration, argv []string) runResult {
	cctx, cancel := context.WithCancel(ctx)
	if timeout > 0 {
		cancel()
		cctx, cancel = context.WithTimeout(ctx, timeout)
	}
	defer cancel()
	// A driver that writes more than the cap gets SIGPIPE.
	stdout := cappedbuf.New(d.cfg.MaxOutputBytes, cappedbuf.Fail)
	stderr := cappedbuf.New(d.cfg.MaxOutputBytes, cappedbuf.Fail)
	c, err := d.start(cctx, argv, stdout, stderr)
	if err != nil {
		return runResult{err: err}
	}
	err = d.wait(cctx, c)
	if errors.Is(err, osexec.ErrWaitDelay) {
		// The driver exited; a process it left behind kept the pipes open.
		err = nil
	}
	res := runResult{stdout: stdout.Bytes(), stderr: stderr.Bytes(), err: err}
	res.tooLarge = stdout.Truncated() || stderr.Truncated()
	if err != nil && cctx.Err() != nil {
		res.timedOut = ctx.Err() == nil
		res.canceled = ctx.Err() != nil
	}
	return res
}

// start starts the driver. "text file busy" is retried a few times: the
// executable may still be open for writing in a process forked just before
// an install renamed it into place (golang.org/issue/22315).
func (d *driver) start(ctx context.Context, argv []string, stdout, stderr io.Writer) (utilexec.Cmd, error) {
	delay := time.Millisecond
	for attempt := 0; ; attempt++ {
		c := d.runner.CommandContext(ctx, d.execPath, argv...)
		c.SetStdout(stdout)
		c.SetStderr(stderr)
		err := c.Start()
		if err == nil || !errors.Is(err, syscall.ETXTBSY) || attempt == 4 || ctx.Err() != nil {
			return c, err
		}
		time.Sleep(delay)
		delay *= 2
	}
}

// boundedWaiter is implemented by commands whose Wait returns soon after
// their context ends, whatever the process and its children do
// (pkg/util/groupexec).
type boundedWaiter interface {
	WaitIsBounded() bool
}

// wait waits for c. With a runner that does not guarantee it, Wait runs in
// a goroutine that is abandoned KillGrace after the timeout.
func (d *driver) wait(ctx context.Context, c utilexec.Cmd) error {
	if bw, ok := c.(boundedWaiter); ok && bw.WaitIsBounded() {
		return c.Wait()
	}
	done := make(chan error, 1)
	go func() { done <- c.Wait() }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	c.Stop()
	t := time.NewTimer(d.cfg.KillGrace)
	defer t.Stop()
	select {
	case err := <-done:
		return err
	case <-t.C:
		return errors.New("driver process could not be reaped")
	}
}

// interpret turns one execution into a Response or a *CallError.
func (d *driver) interpret(cmd Command, timeout time.Duration, res runResult) (*Response, error) {
	ce := &CallError{ExecPath: d.execPath, Command: cmd, ExitCode: -1}
	out := res.stdout
	if len(bytes.TrimSpace(out)) == 0 {
		out = res.stderr
	}
	ce.Output = sample(out)
	switch {
	case res.timedOut:
		ce.Err = fmt.Errorf("%w after %v; its process group was killed", ErrTimeout, timeout)
		return nil, ce
	case res.canceled:
		ce.Err = fmt.Errorf("call canceled: %w", res.err)
		return nil, ce
	case res.tooLarge:
		ce.Output = ""
		ce.Err = fmt.Errorf("%w of %d bytes per stream", ErrOutputTooLarge, d.cfg.MaxOutputBytes)
		return nil, ce
	}
	if res.err != nil {
		var ee utilexec.ExitError
		if !errors.As(res.err, &ee) {
			ce.Err = startError(res.err)
			return nil, ce
		}
		ce.ExitCode, ce.Exit = ee.ExitStatus(), ee.String()
	}
	r, perr := ParseResponse(out)
	return d.status(cmd, ce, r, perr, res.err)
}

// status applies the driver's answer and exit status.
func (d *driver) status(cmd Command, ce *CallError, r *Response, perr, exitErr error) (*Response, error) {
	if perr != nil {
		ce.Err = perr
		if exitErr != nil {
			ce.Err = fmt.Errorf("%w, and %w", ErrExitStatus, perr)
		}
		return nil, ce
	}
	ce.Status, ce.Message = r.Status, r.Message
	switch r.Status {
	case StatusNotSupported:
		d.markUnsupported(cmd)
		ce.Err = ErrNotSupported
	case StatusFailure:
		ce.Err = ErrFailure
	default:
		if exitErr == nil {
			return r, nil
		}
		ce.Err = fmt.Errorf("%w but reported %q: driver bug", ErrExitStatus, StatusSuccess)
	}
	return nil, ce
}

// startError classifies an error that kept the driver from running.
func startError(err error) error {
	switch {
	case errors.Is(err, fs.ErrPermission):
		return fmt.Errorf("%w: %w", ErrPermissionDenied, err)
	case errors.Is(err, utilexec.ErrExecutableNotFound), errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("%w: %w", ErrExecutableNotFound, err)
	}
	return fmt.Errorf("running driver: %w", err)
}
