package discovery

import (
	"fmt"
	"io/fs"
	"os"

	"github.com/nodeplug/nodeplug/pkg/localpv/identity"
	"github.com/nodeplug/nodeplug/pkg/localpv/report"
)

// HeldPath is the path of a local PV on the node that the master does not
// publish (a PV of another provisioner, installation or class), which a
// discovery Job resolves so that the master can tell when one of its
// volumes is the same disk or directory under another path.
type HeldPath struct {
	// Path is the PV's path on the host.
	Path string `json:"p"`
	// Container is where the Job sees it: below a class's mountDir, or in
	// /dev; empty when the Job does not see it.
	Container string `json:"c"`
}

// ErrHeldNotVisible is the error of a held path the Job does not see.
const ErrHeldNotVisible = "not visible to discovery (neither in a class directory nor under /dev)"

// maxHeldError bounds the error reported for one held path.
const maxHeldError = 256

// ResolveHeld returns what each held path leads to now, for at most
// report.MaxHeld of them: a directory's identity with the device its file
// system lives on, or a block device's (through a symlink under DevDir, as
// for a block entry) with its kernel name, and the whole disk's when that
// is a partition; or why it could not be resolved. The paths beyond
// report.MaxHeld are counted in the report (HeldOmitted), never dropped
// silently.
func (s *Scanner) ResolveHeld(held []HeldPath) []report.Held {
	var out []report.Held
	for _, h := range held[:min(len(held), report.MaxHeld)] {
		r := report.Held{Path: h.Path}
		var err error
		if h.Container == "" {
			r.Error = ErrHeldNotVisible
		} else if r.Kind, r.ID, r.Dev, err = s.resolveHeld(h.Container); err != nil {
			r.Error = truncate(err.Error(), maxHeldError)
		}
		r.Whole = s.wholeDisk(r.Dev)
		out = append(out, r)
	}
	return out
}

func (s *Scanner) resolveHeld(p string) (report.VolumeKind, identity.ID, string, error) {
	fi, err := os.Lstat(p)
	if err != nil {
		return "", "", "", err
	}
	switch mode := fi.Mode(); {
	case mode.IsDir():
		id, err := identity.Directory(p)
		dev, _ := s.fileSystemDevice(p)
		return report.KindDirectory, id, dev, err
	case mode&fs.ModeSymlink != 0, mode&fs.ModeDevice != 0 && mode&fs.ModeCharDevice == 0:
		id, dev, err := s.deviceIdentity(p)
		return report.KindBlock, id, dev, err
	}
	return "", "", "", fmt.Errorf("%s is neither a directory nor a block device", p)
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}
