//go:build unix

package groupexec

import (
	osexec "os/exec"
	"syscall"
)

const (
	sigTerm = syscall.SIGTERM
	sigKill = syscall.SIGKILL
)

// setGroupAttr makes the child the leader of a new process group.
func setGroupAttr(c *osexec.Cmd) {
	if c.SysProcAttr == nil {
		c.SysProcAttr = &syscall.SysProcAttr{}
	}
	c.SysProcAttr.Setpgid = true
}

// signalGroup signals every process in the command's process group.
func signalGroup(c *osexec.Cmd, sig syscall.Signal) error {
	if c.Process == nil {
		return nil
	}
	err := syscall.Kill(-c.Process.Pid, sig)
	if err == syscall.ESRCH {
		return nil
	}
	return err
}
