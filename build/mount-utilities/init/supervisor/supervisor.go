package supervisor

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"

	"k8s.io/klog/v2"
)

// prSetChildSubreaper is PR_SET_CHILD_SUBREAPER from <linux/prctl.h>.
const prSetChildSubreaper = 36

// BecomeSubreaper makes orphaned descendants of this process reparent to it
// instead of to PID 1. It is a no-op in effect for PID 1 itself, and lets
// /init reap the FUSE daemons when it is not PID 1 (shareProcessNamespace)
// and lets tests exercise the reaper.
func BecomeSubreaper() error {
	if _, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, 1, 0); errno != 0 {
		return fmt.Errorf("prctl(PR_SET_CHILD_SUBREAPER): %w", errno)
	}
	return nil
}

// Run supervises until it is told to stop and returns the exit code of the
// process; it logs through ctx's logger. signals must deliver SIGCHLD, SIGTERM and SIGINT (the caller
// registers them with signal.Notify before any child can exit).
//
// With no args, Run only reaps: it returns 0 on SIGTERM or SIGINT. With
// args, Run starts args[0] (looked up in PATH) with the remaining
// arguments, forwards SIGTERM and SIGINT to it, and returns when it exits:
// 0 if it exited 0 or was killed by a signal that Run forwarded, its exit
// status otherwise, and 128+N if signal N killed it unasked.
func Run(ctx context.Context, args []string, signals <-chan os.Signal) (int, error) {
	logger := klog.FromContext(ctx)
	if len(args) == 0 {
		return pause(logger, signals), nil
	}
	return supervise(logger, args, signals)
}

func pause(logger klog.Logger, signals <-chan os.Signal) int {
	logger.Info("No command: reaping orphans until SIGTERM")
	reap(logger, 0)
	for sig := range signals {
		switch sig {
		case syscall.SIGCHLD:
			reap(logger, 0)
		case syscall.SIGTERM, syscall.SIGINT:
			logger.Info("Stopping", "signal", sig.String())
			return 0
		}
	}
	return 0
}

func supervise(logger klog.Logger, args []string, signals <-chan os.Signal) (int, error) {
	path, err := exec.LookPath(args[0])
	if err != nil {
		return 1, fmt.Errorf("command %q: %w", args[0], err)
	}
	child, err := os.StartProcess(path, args, &os.ProcAttr{
		Files: []*os.File{os.Stdin, os.Stdout, os.Stderr},
	})
	if err != nil {
		return 1, fmt.Errorf("starting %q: %w", args[0], err)
	}
	// The child is reaped by reap (wait4 on any pid), never by child.Wait.
	defer func() { _ = child.Release() }()
	logger.Info("Started command", "command", args, "pid", child.Pid)

	var forwarded syscall.Signal
	if status, done := reap(logger, child.Pid); done {
		return exitCode(status, forwarded), nil
	}
	for sig := range signals {
		switch sig {
		case syscall.SIGCHLD:
			if status, done := reap(logger, child.Pid); done {
				logger.Info("Command exited", "pid", child.Pid, "status", describe(status))
				return exitCode(status, forwarded), nil
			}
		case syscall.SIGTERM, syscall.SIGINT:
			s := sig.(syscall.Signal)
			logger.Info("Forwarding signal", "signal", sig.String(), "pid", child.Pid)
			if err := child.Signal(s); err != nil && !errors.Is(err, os.ErrProcessDone) {
				logger.Error(err, "Forwarding signal failed", "signal", sig.String(), "pid", child.Pid)
			}
			forwarded = s
		}
	}
	return 1, errors.New("signal channel closed")
}

// reap collects every child that has exited, without blocking. If one of
// them is pid, it returns its status and true.
func reap(logger klog.Logger, pid int) (syscall.WaitStatus, bool) {
	var (
		found  bool
		status syscall.WaitStatus
	)
	for {
		var ws syscall.WaitStatus
		got, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil || got <= 0 {
			// ECHILD: no children at all; 0: none has exited yet.
			return status, found
		}
		if pid != 0 && got == pid {
			found, status = true, ws
			continue
		}
		logger.V(2).Info("Reaped orphan", "pid", got, "status", describe(ws))
	}
}

func exitCode(ws syscall.WaitStatus, forwarded syscall.Signal) int {
	switch {
	case ws.Exited():
		return ws.ExitStatus()
	case ws.Signaled() && ws.Signal() == forwarded:
		return 0
	case ws.Signaled():
		return 128 + int(ws.Signal())
	}
	return 1
}

func describe(ws syscall.WaitStatus) string {
	if ws.Signaled() {
		return fmt.Sprintf("killed by signal %d (%s)", int(ws.Signal()), ws.Signal())
	}
	return fmt.Sprintf("exit %d", ws.ExitStatus())
}
