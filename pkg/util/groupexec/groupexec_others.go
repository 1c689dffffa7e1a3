//go:build !unix

package groupexec

import (
	"os"
	osexec "os/exec"
)

var (
	sigTerm = os.Kill
	sigKill = os.Kill
)

// setGroupAttr is a no-op where process groups are not available.
func setGroupAttr(*osexec.Cmd) {}

// signalGroup can only signal the process itself on this platform.
func signalGroup(c *osexec.Cmd, sig os.Signal) error {
	if c.Process == nil {
		return nil
	}
	return c.Process.Signal(sig)
}
