package cleanup

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"k8s.io/klog/v2"

	"github.com/nodeplug/nodeplug/pkg/localpv/config"
	"github.com/nodeplug/nodeplug/pkg/localpv/discovery"
	"github.com/nodeplug/nodeplug/pkg/localpv/report"
	"github.com/nodeplug/nodeplug/pkg/localpv/wipe"
)

// Request describes the volume to wipe, with container paths.
type Request struct {
	// Kind is the kind of entry discovery reported.
	Kind report.VolumeKind
	// MountDir is the class directory inside the container.
	MountDir string
	// Path is the volume inside the container; a direct child of MountDir.
	Path string
	// Command is the block cleaner argv; used only for block entries.
	Command []string
	// Expected is the machine and disk the PV recorded; they are checked
	// before anything is wiped.
	Expected Expected
}

// Cleaner wipes volumes.
type Cleaner interface {
	// Clean wipes one volume. It is idempotent: wiping a clean volume
	// succeeds. It first proves that it runs on the PV's machine and that
	// the path leads to the PV's disk, and wipes nothing otherwise,
	// returning the *MismatchError.
	Clean(ctx context.Context, req Request) error
}

type cleaner struct {
	scanner       *discovery.Scanner
	checker       Checker
	mountInfoPath string
	output        io.Writer
}

var _ Cleaner = &cleaner{}

// NewCleaner returns a Cleaner that checks identities with checker, runs
// block cleaner commands and copies their output to output (the Job's log).
func NewCleaner(scanner *discovery.Scanner, checker Checker, mountInfoPath string, output io.Writer) Cleaner {
	return &cleaner{scanner: scanner, checker: checker, mountInfoPath: mountInfoPath, output: output}
}

// Clean checks, in order and before it writes anything: the path, the
// machine, that the volume is there (a mount point, or a link to a block
// device), and the disk it leads to. The volume is opened once (a block
// device exclusively), its disk is checked on that descriptor, and the wipe
// goes through the same descriptor: a path that leads elsewhere after the
// check changes nothing.
func (c *cleaner) Clean(ctx context.Context, req Request) error {
	if filepath.Clean(req.Path) != req.Path || filepath.Dir(req.Path) != req.MountDir || !config.Within(req.Path, req.MountDir) || req.Path == req.MountDir {
		return fmt.Errorf("refusing to clean %s: not a direct child of %s", req.Path, req.MountDir)
	}
	switch req.Kind {
	case report.KindDirectory, report.KindBlock:
	default:
		return fmt.Errorf("refusing to clean %s: unknown kind %q", req.Path, req.Kind)
	}
	if err := c.checker.CheckMachine(ctx, req.Expected); err != nil {
		return err
	}
	if req.Kind == report.KindDirectory {
		return c.cleanDirectory(ctx, req)
	}
	return c.cleanBlock(ctx, req)
}

func (c *cleaner) cleanDirectory(ctx context.Context, req Request) error {
	p := req.Path
	fi, err := os.Lstat(p)
	if err != nil {
		return fmt.Errorf("failed to stat %s: %w", p, err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("refusing to clean %s: not a directory (mode %s)", p, fi.Mode())
	}
	mps, err := discovery.MountPoints(c.mountInfoPath)
	if err != nil {
		return err
	}
	if !mps[p] {
		return fmt.Errorf("refusing to clean %s: not a mount point, the disk may be missing", p)
	}
	f, err := wipe.OpenDirectory(p)
	if err != nil {
		return err
	}
	defer func() { _ = f.Close() }()
	if err := c.checker.CheckDisk(ctx, req.Expected.DiskID, Volume{Kind: report.KindDirectory, Path: p, File: f}); err != nil {
		return err
	}
	return wipe.CleanDirectoryFile(ctx, f, c.mountInfoPath)
}

func (c *cleaner) cleanBlock(ctx context.Context, req Request) error {
	if len(req.Command) == 0 {
		return fmt.Errorf("refusing to clean %s: no block cleaner command configured", req.Path)
	}
	fi, err := os.Lstat(req.Path)
	if err != nil {
		return fmt.Errorf("failed to stat %s: %w", req.Path, err)
	}
	if fi.Mode()&fs.ModeSymlink == 0 && (fi.Mode()&fs.ModeDevice == 0 || fi.Mode()&fs.ModeCharDevice != 0) {
		return fmt.Errorf("refusing to clean %s: not a block device or a symlink to one", req.Path)
	}
	dev, err := c.scanner.ResolveDevice(req.Path)
	if err != nil {
		return fmt.Errorf("refusing to clean %s: %w", req.Path, err)
	}
	f, err := openExclusive(dev)
	if err != nil {
		return fmt.Errorf("refusing to clean %s: %w", req.Path, err)
	}
	defer func() { _ = f.Close() }()
	if err := c.checker.CheckDisk(ctx, req.Expected.DiskID, Volume{Kind: report.KindBlock, Path: req.Path, Device: dev, File: f}); err != nil {
		return err
	}
	checked, err := releaseExclusive(f)
	if err != nil {
		return fmt.Errorf("refusing to clean %s: %w", req.Path, err)
	}
	defer func() { _ = checked.Close() }()
	return c.runCleaner(ctx, req.Command, dev, checked)
}

// CheckedDevice is where a block cleaner command finds the device the
// cleanup checked: the descriptor it inherits as fd 3, open for reading and
// writing but not exclusively, so that a command may claim it exclusively
// itself (blkdiscard and wipefs do; the programs of package wipe do). It is
// the value of LOCAL_PV_BLKDEVICE and of $(LOCAL_PV_BLKDEVICE) in its
// arguments; opening it opens the checked device, whatever its name leads
// to by then.
const CheckedDevice = "/proc/self/fd/3"

// runCleaner runs a block cleaner command on the checked device f (dev in
// logs), passed as fd 3, and fails with the tail of its output.
func (c *cleaner) runCleaner(ctx context.Context, command []string, dev string, f *os.File) error {
	argv := ExpandCommand(command, CheckedDevice)
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), config.BlockDeviceVariable+"="+CheckedDevice)
	cmd.ExtraFiles = []*os.File{f}
	var tail tailBuffer
	out := io.MultiWriter(c.output, &tail)
	cmd.Stdout, cmd.Stderr = out, out
	klog.FromContext(ctx).Info("Running block cleaner", "device", dev, "command", argv)
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("block cleaner %q failed on %s: %w: %s", argv[0], dev, err, tail.String())
	}
	return nil
}

// ExpandCommand replaces $(LOCAL_PV_BLKDEVICE) in every argument.
func ExpandCommand(command []string, dev string) []string {
	out := make([]string, len(command))
	for i, a := range command {
		out[i] = strings.ReplaceAll(a, "$("+config.BlockDeviceVariable+")", dev)
	}
	return out
}

// tailBuffer keeps the last bytes written, for error messages.
type tailBuffer struct{ b bytes.Buffer }

const tailBytes = 1024

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.b.Write(p)
	if t.b.Len() > 2*tailBytes {
		keep := t.b.Bytes()[t.b.Len()-tailBytes:]
		t.b = *bytes.NewBuffer(append([]byte(nil), keep...))
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	s := t.b.String()
	if len(s) > tailBytes {
		s = s[len(s)-tailBytes:]
	}
	return strings.TrimSpace(s)
}
