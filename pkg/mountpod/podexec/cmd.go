package podexec

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	utilexec "k8s.io/utils/exec"

	"github.com/nodeplug/nodeplug/pkg/mountpod"
)

// podCmd is a utilexec.Cmd that runs in a mount pod. Output reaches the
// writers when the command has finished (ExecSync does not stream).
type podCmd struct {
	ctx     context.Context
	exec    PodExecutor
	target  mountpod.Target
	argv    []string
	timeout time.Duration
	observe func(err error, took time.Duration)

	stdout, stderr io.Writer
	unsupported    []string

	mu      sync.Mutex
	cancel  context.CancelFunc
	started bool
	done    chan struct{}
	err     error
}

var _ utilexec.Cmd = &podCmd{}

func (c *podCmd) SetDir(dir string) {
	if dir != "" {
		c.unsupported = append(c.unsupported, "a working directory")
	}
}

func (c *podCmd) SetStdin(io.Reader) { c.unsupported = append(c.unsupported, "standard input") }

func (c *podCmd) SetEnv(env []string) {
	if len(env) > 0 {
		c.unsupported = append(c.unsupported, "environment variables")
	}
}

func (c *podCmd) SetStdout(w io.Writer) { c.stdout = w }
func (c *podCmd) SetStderr(w io.Writer) { c.stderr = w }

func (c *podCmd) StdoutPipe() (io.ReadCloser, error) { return nil, c.unsupportedErr("output pipes") }
func (c *podCmd) StderrPipe() (io.ReadCloser, error) { return nil, c.unsupportedErr("output pipes") }

func (c *podCmd) unsupportedErr(what string) error {
	return fmt.Errorf("%q in %s: %s %w (the CRI's ExecSync takes only a command line)", c.argv[0], c.target, what, ErrUnsupported)
}

// Start starts the command; Wait returns its result.
func (c *podCmd) Start() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.started {
		return errors.New("exec: already started")
	}
	if len(c.unsupported) > 0 {
		return c.unsupportedErr(strings.Join(c.unsupported, ", "))
	}
	c.started = true
	ctx, cancel := context.WithCancel(c.ctx)
	c.cancel = cancel
	c.done = make(chan struct{})
	go func() {
		defer close(c.done)
		defer cancel()
		c.err = c.execute(ctx)
	}()
	return nil
}

func (c *podCmd) execute(ctx context.Context) error {
	start := time.Now()
	stdout, stderr, err := c.exec.ExecInPod(ctx, c.target, c.argv, timeoutFor(ctx, c.timeout))
	if c.observe != nil {
		c.observe(err, time.Since(start))
	}
	for _, s := range []struct {
		w io.Writer
		b []byte
	}{{c.stdout, stdout}, {c.stderr, stderr}} {
		if s.w != nil && len(s.b) > 0 {
			if _, werr := s.w.Write(s.b); werr != nil && err == nil {
				err = werr
			}
		}
	}
	return err
}

func (c *podCmd) Wait() error {
	c.mu.Lock()
	done := c.done
	c.mu.Unlock()
	if done == nil {
		return errors.New("exec: not started")
	}
	<-done
	return c.err
}

// WaitIsBounded tells pkg/flexvolume/driver that Wait returns soon after
// the context ends: ExecSync is a single call bounded by its own timeout.
func (c *podCmd) WaitIsBounded() bool { return true }

func (c *podCmd) Run() error {
	if err := c.Start(); err != nil {
		return err
	}
	return c.Wait()
}

func (c *podCmd) Output() ([]byte, error) {
	if c.stdout != nil {
		return nil, errors.New("exec: Stdout already set")
	}
	var out bytes.Buffer
	c.stdout = &out
	err := c.Run()
	return out.Bytes(), err
}

// CombinedOutput returns stdout followed by stderr: ExecSync returns the
// two streams apart, so their interleaving is lost.
func (c *podCmd) CombinedOutput() ([]byte, error) {
	if c.stdout != nil || c.stderr != nil {
		return nil, errors.New("exec: Stdout or Stderr already set")
	}
	var out, errOut bytes.Buffer
	c.stdout, c.stderr = &out, &errOut
	err := c.Run()
	return append(out.Bytes(), errOut.Bytes()...), err
}

// Stop cancels a running command; the runtime kills it.
func (c *podCmd) Stop() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cancel != nil {
		c.cancel()
	}
}

// errCmd is a Cmd that fails with err when run.
type errCmd struct{ err error }

var _ utilexec.Cmd = errCmd{}

func (e errCmd) Run() error                         { return e.err }
func (e errCmd) CombinedOutput() ([]byte, error)    { return nil, e.err }
func (e errCmd) Output() ([]byte, error)            { return nil, e.err }
func (e errCmd) SetDir(string)                      {}
func (e errCmd) SetStdin(io.Reader)                 {}
func (e errCmd) SetStdout(io.Writer)                {}
func (e errCmd) SetStderr(io.Writer)                {}
func (e errCmd) SetEnv([]string)                    {}
func (e errCmd) StdoutPipe() (io.ReadCloser, error) { return nil, e.err }
func (e errCmd) StderrPipe() (io.ReadCloser, error) { return nil, e.err }
func (e errCmd) Start() error                       { return e.err }
func (e errCmd) Wait() error                        { return e.err }
func (e errCmd) Stop()                              {}
