package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// manager starts and stops the units of dir, keeping each running
// service's PID and start time in stateDir.
type manager struct {
	dir      string   // the node's own unit directory, first in unitPath
	unitPath []string // where units and drop-ins are looked for, first first
	stateDir string   // <unit>.pid: "PID STARTTIME"
	proc     string   // this PID namespace's /proc
	hostProc string   // the host's /proc, mounted in the node ("" if none)
}

// mainProcess is a process of a unit, known by its PID and start time.
type mainProcess struct {
	PID   int
	Start uint64 // clock ticks after boot, field 22 of /proc/PID/stat
}

// state is what the state file says of a unit: its main process, and the
// supervisor that restarts it (Restart= other than no), "PID START
// [SUPERVISOR_PID SUPERVISOR_START]".
func (m *manager) state(name string) (main, super mainProcess) {
	raw, err := os.ReadFile(m.statePath(name))
	if err != nil {
		return
	}
	_, _ = fmt.Sscan(string(raw), &main.PID, &main.Start, &super.PID, &super.Start)
	return
}

// alive reports whether p still runs: the same PID with the same start
// time (so a PID reused by another process is never taken for it).
func (m *manager) aliveProc(p mainProcess) bool {
	if p.PID <= 0 {
		return false
	}
	start, state, err := procStat(m.proc, p.PID)
	return err == nil && start == p.Start && state != "Z" && state != "X"
}

// running returns the unit's main process if it still runs.
func (m *manager) running(name string) (mainProcess, bool) {
	main, _ := m.state(name)
	return main, m.aliveProc(main)
}

// supervising returns the unit's supervisor if it still runs.
func (m *manager) supervising(name string) (mainProcess, bool) {
	_, super := m.state(name)
	return super, m.aliveProc(super)
}

func (m *manager) statePath(name string) string { return filepath.Join(m.stateDir, name+".pid") }

// procStat returns the start time and state of pid from proc.
func procStat(proc string, pid int) (uint64, string, error) {
	raw, err := os.ReadFile(filepath.Join(proc, strconv.Itoa(pid), "stat"))
	if err != nil {
		return 0, "", err
	}
	// The command name may hold blanks and parentheses: fields follow the last ")".
	s := string(raw)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, "", fmt.Errorf("%s/%d/stat: no command name", proc, pid)
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 20 {
		return 0, "", fmt.Errorf("%s/%d/stat: %d fields", proc, pid, len(f))
	}
	start, err := strconv.ParseUint(f[19], 10, 64)
	return start, f[0], err
}

// start runs the unit's command in a new session, its output appended to
// the unit's log, and records it; with Restart= other than no, a
// supervisor (this binary) runs it and starts it again when it ends. A
// running unit is left alone.
func (m *manager) start(u *unit) error {
	if _, ok := m.running(u.Name); ok {
		return nil
	}
	if _, ok := m.supervising(u.Name); ok {
		return nil // between two runs of a restarting service
	}
	argv, env, err := m.execArgs(u)
	if err != nil {
		return err
	}
	if u.Restart != "no" {
		return m.startSupervisor(u)
	}
	cmd, err := m.command(u, argv, env, &syscall.SysProcAttr{Setsid: true})
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", u.Name, err)
	}
	// The process is not waited for: when this command exits, the node's
	// init adopts and reaps it.
	defer func() { _ = cmd.Process.Release() }()
	return m.record(u, cmd.Process.Pid, mainProcess{})
}

// execArgs is the service's command line and environment as of now:
// its EnvironmentFile= files read, its variables expanded in ExecStart.
func (m *manager) execArgs(u *unit) (argv, env []string, err error) {
	if env, err = m.environment(u); err != nil {
		return nil, nil, err
	}
	return expandArgv(u.ExecStart, env), env, nil
}

// command is argv with env, in /, its output the unit's.
func (m *manager) command(u *unit, argv, env []string, attr *syscall.SysProcAttr) (*exec.Cmd, error) {
	out, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if u.Output != "" {
		out, err = os.OpenFile(u.Output, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	}
	if err != nil {
		return nil, fmt.Errorf("open the output of %s: %w", u.Name, err)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = env
	cmd.Dir, cmd.Stdout, cmd.Stderr, cmd.SysProcAttr = "/", out, out, attr
	return cmd, nil
}

// record writes the state file of a started main process pid (and its
// supervisor), and the host's PID file.
func (m *manager) record(u *unit, pid int, super mainProcess) error {
	start, _, err := procStat(m.proc, pid)
	if err != nil {
		_ = syscall.Kill(pid, syscall.SIGKILL)
		return fmt.Errorf("read the start time of %s (pid %d): %w", u.Name, pid, err)
	}
	if err := os.MkdirAll(m.stateDir, 0o755); err != nil {
		return err
	}
	line := fmt.Sprintf("%d %d %d %d\n", pid, start, super.PID, super.Start)
	if err := writeAtomic(m.statePath(u.Name), line); err != nil {
		return err
	}
	return m.writeHostPID(u, pid)
}

// stop sends the unit's kill signal to its process group, waits up to
// TimeoutStopSec for the main process to end, then kills the group. A
// supervisor is stopped first, and stops its service itself.
func (m *manager) stop(u *unit) error {
	if super, ok := m.supervising(u.Name); ok {
		_ = syscall.Kill(super.PID, syscall.SIGTERM)
		deadline := time.Now().Add(u.StopTimeout + 5*time.Second)
		for m.aliveProc(super) && time.Now().Before(deadline) {
			time.Sleep(50 * time.Millisecond)
		}
		if m.aliveProc(super) {
			_ = syscall.Kill(super.PID, syscall.SIGKILL)
		}
	}
	p, ok := m.running(u.Name)
	if ok {
		_ = syscall.Kill(-p.PID, u.KillSignal)
		_ = syscall.Kill(p.PID, u.KillSignal)
		deadline := time.Now().Add(u.StopTimeout)
		for m.alive(u.Name) && time.Now().Before(deadline) {
			time.Sleep(50 * time.Millisecond)
		}
		if m.alive(u.Name) {
			fmt.Fprintf(os.Stderr, "%s: stop timed out after %s; killing it\n", u.Name, u.StopTimeout)
			_ = syscall.Kill(-p.PID, syscall.SIGKILL)
			_ = syscall.Kill(p.PID, syscall.SIGKILL)
			for i := 0; m.alive(u.Name) && i < 200; i++ {
				time.Sleep(50 * time.Millisecond)
			}
		}
		if m.alive(u.Name) {
			return fmt.Errorf("%s (pid %d) did not end after SIGKILL", u.Name, p.PID)
		}
	}
	if err := os.Remove(m.statePath(u.Name)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	if u.HostPIDFile != "" {
		if err := os.Remove(u.HostPIDFile); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	return nil
}

func (m *manager) alive(name string) bool {
	_, ok := m.running(name)
	return ok
}

// writeHostPID writes the host's PID of pid (this namespace's) to the
// unit's X-HostPIDFile, found in the host's /proc by its NSpid line, so
// that the host's scripts find the service however it was (re)started.
func (m *manager) writeHostPID(u *unit, pid int) error {
	if u.HostPIDFile == "" {
		return nil
	}
	if m.hostProc == "" {
		return fmt.Errorf("%s: X-HostPIDFile is set but the host's /proc is not mounted in this node", u.Name)
	}
	host, err := hostPID(m.proc, m.hostProc, pid)
	if err != nil {
		return fmt.Errorf("%s: %w", u.Name, err)
	}
	return writeAtomic(u.HostPIDFile, fmt.Sprintf("%d\n", host))
}

// hostPID finds, in hostProc, the process of this PID namespace whose
// PID here is pid.
func hostPID(proc, hostProc string, pid int) (int, error) {
	ns, err := os.Readlink(filepath.Join(proc, "self", "ns", "pid"))
	if err != nil {
		return 0, err
	}
	entries, err := os.ReadDir(hostProc)
	if err != nil {
		return 0, err
	}
	want := "\t" + strconv.Itoa(pid)
	for _, e := range entries {
		h, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		raw, err := os.ReadFile(filepath.Join(hostProc, e.Name(), "status"))
		if err != nil {
			continue
		}
		for _, l := range strings.Split(string(raw), "\n") {
			if strings.HasPrefix(l, "NSpid:") && strings.HasSuffix(l, want) && strings.Count(l, "\t") > 1 {
				if other, err := os.Readlink(filepath.Join(hostProc, e.Name(), "ns", "pid")); err == nil && other == ns {
					return h, nil
				}
			}
		}
	}
	return 0, fmt.Errorf("no process of this PID namespace with pid %d in %s", pid, hostProc)
}

func writeAtomic(path, content string) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(content), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
