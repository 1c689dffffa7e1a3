package main

import (
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"
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
	env := append(m.baseEnvironment(), unitPathEnv+"="+strings.Join(m.unitPath, ":"))
	cmd, err := m.command(u, []string{self, superviseVerb, u.Name}, env, &syscall.SysProcAttr{Setsid: true})
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
	// Started once is started, as for systemd's Type=simple: a service
	// that exits at once (a kubelet before kubeadm wrote its
	// configuration) is the supervisor's to start again.
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
		if _, super := m.state(u.Name); super.PID == cmd.Process.Pid {
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
// stops the service as stop does and exits. Each run reads the unit and
// its environment files afresh. A first run that cannot start fails the
// supervisor (and so the start); a later one is tried again.
func supervise(m *manager, name string) int {
	u, err := loadUnit(m.unitPath, name)
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
	for first := true; ; first = false {
		pid, exited, err := m.runOnce(u, self)
		switch {
		case err != nil && first:
			fmt.Fprintf(os.Stderr, "supervise %s: %v\n", name, err)
			return exitFailure
		case err != nil:
			fmt.Fprintf(os.Stderr, "%s: %v; trying again in %s\n", name, err, u.RestartSec)
		default:
			select {
			case <-stopping:
				stopChild(u, pid, exited)
				m.forget(u)
				return 0
			case err := <-exited:
				if u.Restart == "on-failure" && err == nil {
					m.forget(u)
					return 0
				}
				fmt.Fprintf(os.Stderr, "%s: exited (%v); restarting in %s\n", name, err, u.RestartSec)
			}
		}
		select {
		case <-stopping:
			m.forget(u)
			return 0
		case <-time.After(u.RestartSec):
		}
		if u = m.reload(u); u.Restart == "no" {
			m.forget(u)
			return 0
		}
	}
}

// runOnce starts the unit's command, its environment files read now, and
// records it; the channel tells when it ends.
func (m *manager) runOnce(u *unit, self mainProcess) (int, <-chan error, error) {
	argv, env, err := m.execArgs(u)
	if err != nil {
		return 0, nil, err
	}
	cmd, err := m.command(u, argv, env, &syscall.SysProcAttr{Setpgid: true})
	if err != nil {
		return 0, nil, err
	}
	if err := cmd.Start(); err != nil {
		return 0, nil, err
	}
	if err := m.record(u, cmd.Process.Pid, self); err != nil {
		fmt.Fprintf(os.Stderr, "supervise %s: %v\n", u.Name, err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	return cmd.Process.Pid, exited, nil
}

// reload reads the unit again for its next run, as systemd would after a
// daemon-reload; a unit that no longer loads keeps its last settings.
func (m *manager) reload(u *unit) *unit {
	next, err := loadUnit(m.unitPath, u.Name)
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v; running it as it was\n", u.Name, err)
		return u
	}
	return next
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
