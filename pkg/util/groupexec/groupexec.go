package groupexec

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	osexec "os/exec"
	"sync"
	"time"

	utilexec "k8s.io/utils/exec"
)

const (
	// DefaultWaitDelay is how long Wait waits for inherited stdout/stderr
	// pipes to close after the process exited or the context ended.
	DefaultWaitDelay = 2 * time.Second
	// DefaultStopGrace is how long Stop waits after SIGTERM before it sends
	// SIGKILL to the group.
	DefaultStopGrace = 5 * time.Second
)

// Options tunes the executor. Zero values mean the defaults.
type Options struct {
	// WaitDelay bounds how long Wait blocks on pipes held open by processes
	// that outlived the command; see os/exec.Cmd.WaitDelay.
	WaitDelay time.Duration
	// StopGrace is the delay between SIGTERM and SIGKILL in Cmd.Stop.
	StopGrace time.Duration
}

type executor struct {
	opts Options
}

var _ utilexec.Interface = &executor{}

// New returns an exec.Interface that runs each command in its own process
// group, with default options.
func New() utilexec.Interface {
	return NewWithOptions(Options{})
}

// NewWithOptions returns an exec.Interface like New with the given options.
func NewWithOptions(opts Options) utilexec.Interface {
	if opts.WaitDelay <= 0 {
		opts.WaitDelay = DefaultWaitDelay
	}
	if opts.StopGrace <= 0 {
		opts.StopGrace = DefaultStopGrace
	}
	return &executor{opts: opts}
}

// Command is part of exec.Interface.
func (e *executor) Command(name string, args ...string) utilexec.Cmd {
	return e.wrap(osexec.Command(name, args...))
}

// CommandContext is part of exec.Interface. When ctx ends before the command
// exits, the whole process group gets SIGKILL.
func (e *executor) CommandContext(ctx context.Context, name string, args ...string) utilexec.Cmd {
	c := osexec.CommandContext(ctx, name, args...)
	c.Cancel = func() error { return signalGroup(c, sigKill) }
	return e.wrap(c)
}

// LookPath is part of exec.Interface.
func (e *executor) LookPath(file string) (string, error) {
	p, err := osexec.LookPath(file)
	if errors.Is(err, osexec.ErrDot) {
		err = nil
	}
	return p, mapError(err)
}

func (e *executor) wrap(c *osexec.Cmd) *cmd {
	if errors.Is(c.Err, osexec.ErrDot) {
		c.Err = nil
	}
	setGroupAttr(c)
	c.WaitDelay = e.opts.WaitDelay
	return &cmd{c: c, grace: e.opts.StopGrace, exited: make(chan struct{})}
}

// cmd wraps os/exec.Cmd. Wait must be called at most once, as with os/exec.
type cmd struct {
	c         *osexec.Cmd
	grace     time.Duration
	exited    chan struct{}
	closeOnce sync.Once
}

var _ utilexec.Cmd = &cmd{}

func (c *cmd) SetDir(dir string)       { c.c.Dir = dir }
func (c *cmd) SetStdin(in io.Reader)   { c.c.Stdin = in }
func (c *cmd) SetStdout(out io.Writer) { c.c.Stdout = out }
func (c *cmd) SetStderr(out io.Writer) { c.c.Stderr = out }
func (c *cmd) SetEnv(env []string)     { c.c.Env = env }
func (c *cmd) Start() error            { return mapError(c.c.Start()) }
func (c *cmd) markExited()             { c.closeOnce.Do(func() { close(c.exited) }) }
func (c *cmd) StdoutPipe() (io.ReadCloser, error) {
	r, err := c.c.StdoutPipe()
	return r, mapError(err)
}

func (c *cmd) StderrPipe() (io.ReadCloser, error) {
	r, err := c.c.StderrPipe()
	return r, mapError(err)
}

// WaitIsBounded reports whether Wait returns at most WaitDelay after the
// context of CommandContext ends: the group is killed then, and pipes held
// by processes that left the group are closed.
func (c *cmd) WaitIsBounded() bool { return c.c.Cancel != nil }

// Wait is part of exec.Cmd.
func (c *cmd) Wait() error {
	defer c.markExited()
	return mapError(c.c.Wait())
}

// Run is part of exec.Cmd.
func (c *cmd) Run() error {
	if err := c.Start(); err != nil {
		return err
	}
	return c.Wait()
}

// CombinedOutput is part of exec.Cmd.
func (c *cmd) CombinedOutput() ([]byte, error) {
	var b bytes.Buffer
	c.c.Stdout, c.c.Stderr = &b, &b
	err := c.Run()
	return b.Bytes(), err
}

// Output is part of exec.Cmd.
func (c *cmd) Output() ([]byte, error) {
	var b bytes.Buffer
	c.c.Stdout = &b
	err := c.Run()
	return b.Bytes(), err
}

// Stop sends SIGTERM to the process group and, if the command has not been
// waited for after the grace period, SIGKILL. It does not block.
func (c *cmd) Stop() {
	if c.c.Process == nil {
		return
	}
	_ = signalGroup(c.c, sigTerm)
	go func() {
		t := time.NewTimer(c.grace)
		defer t.Stop()
		select {
		case <-c.exited:
		case <-t.C:
			_ = signalGroup(c.c, sigKill)
		}
	}()
}

// mapError turns os/exec errors into the shapes k8s.io/utils/exec callers
// expect (ExitError, ErrExecutableNotFound) while keeping the cause: unlike
// exec.New, a permission problem stays recognisable with errors.Is(err,
// fs.ErrPermission).
func mapError(err error) error {
	if err == nil {
		return nil
	}
	if ee, ok := errors.AsType[*osexec.ExitError](err); ok {
		return &utilexec.ExitErrorWrapper{ExitError: ee}
	}
	if errors.Is(err, osexec.ErrNotFound) || errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%w: %w", utilexec.ErrExecutableNotFound, err)
	}
	return err
}
