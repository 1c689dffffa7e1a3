package main

import (
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"
)

// superviseVerb is the hidden verb of the supervisor that runs a unit with
// Restart= other than no.
const superviseVerb = "__supervise"

// startSupervisor runs this binary as the unit's supervisor in a session
// of its own and waits until it has started the service.
func (m *manager) startSupervisor(u *unit) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	cmd, err := m.command(u, []string{self, superviseVerb, u.Name}, &syscall.SysProcAttr{Setsid: true})
	if err != nil {
		return err
	}
	if err := os.Remove(m.statePath(u.Name)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start the supervisor of %s: %w", u.Name, err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
		if _, ok := m.running(u.Name); ok {
			_ = cmd.Process.Release()
			return nil
		}
		select {
		case err := <-done:
			return fmt.Errorf("the supervisor of %s exited (see its output): %w", u.Name, err)
		case <-time.After(20 * time.Millisecond):
		}
	}
	return fmt.Errorf("the supervisor of %s started no process in 10 s", u.Name)
}

// supervise runs the unit, starting it again RestartSec after it ends
// (Restart=always) or fails (Restart=on-failure), until SIGTERM: then it
// stops the service as stop does and exits.
func supervise(m *manager, name string) int {
	u, err := loadUnit(m.dir, name)
	if err != nil {
		fmt.Fprintf(os.Stderr, "supervise %s: %v\n", name, err)
		return exitFailure
	}
	stopping := make(chan os.Signal, 1)
	signal.Notify(stopping, syscall.SIGTERM, syscall.SIGINT)
	self := mainProcess{PID: os.Getpid()}
	if self.Start, _, err = procStat(m.proc, self.PID); err != nil {
		fmt.Fprintf(os.Stderr, "supervise %s: %v\n", name, err)
		return exitFailure
	}
	for {
		cmd, err := m.command(u, u.ExecStart, &syscall.SysProcAttr{Setpgid: true})
		if err == nil {
			err = cmd.Start()
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "supervise %s: %v\n", name, err)
			return exitFailure
		}
		if err := m.record(u, cmd.Process.Pid, self); err != nil {
			fmt.Fprintf(os.Stderr, "supervise %s: %v\n", name, err)
		}
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
		select {
		case <-stopping:
			stopChild(u, cmd.Process.Pid, exited)
			m.forget(u)
			return 0
		case err := <-exited:
			if u.Restart == "on-failure" && err == nil {
				m.forget(u)
				return 0
			}
			fmt.Fprintf(os.Stderr, "%s: exited (%v); restarting in %s\n", name, err, u.RestartSec)
		}
		select {
		case <-stopping:
			m.forget(u)
			return 0
		case <-time.After(u.RestartSec):
		}
	}
}

// stopChild signals the service's process group, and kills it after
// TimeoutStopSec.
func stopChild(u *unit, pid int, exited <-chan error) {
	_ = syscall.Kill(-pid, u.KillSignal)
	select {
	case <-exited:
	case <-time.After(u.StopTimeout):
		fmt.Fprintf(os.Stderr, "%s: stop timed out after %s; killing it\n", u.Name, u.StopTimeout)
		_ = syscall.Kill(-pid, syscall.SIGKILL)
		<-exited
	}
}

// forget removes the unit's state and host PID files.
func (m *manager) forget(u *unit) {
	_ = os.Remove(m.statePath(u.Name))
	if u.HostPIDFile != "" {
		_ = os.Remove(u.HostPIDFile)
	}
}
