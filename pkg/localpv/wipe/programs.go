package wipe

import (
	"context"
	crand "crypto/rand"
	"errors"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"

	"k8s.io/klog/v2"

	"github.com/nodeplug/nodeplug/pkg/localpv/config"
	"github.com/nodeplug/nodeplug/pkg/localpv/discovery"
)

// Dir is the directory of the image where the programs are installed.
const Dir = "/scripts"

// The environment variables of the upstream contract.
const (
	// BlockDeviceVariable names the device a block cleaner wipes. The
	// cleanup Job sets it.
	BlockDeviceVariable = config.BlockDeviceVariable
	// FilesystemVariable names the directory fsclean.sh empties.
	FilesystemVariable = "LOCAL_PV_FILESYSTEM"
)

// The names of the programs, as installed in Dir.
const (
	Shred      = "shred.sh"
	DDZero     = "dd_zero.sh"
	BlkDiscard = "blkdiscard.sh"
	QuickReset = "quick_reset.sh"
	FSClean    = "fsclean.sh"
)

// maxPasses bounds the pass count of shred.sh and dd_zero.sh.
const maxPasses = 100

type program struct {
	// usage is the argument synopsis and a one-line description.
	usage string
	run   func(ctx context.Context, r *runner, args []string) error
}

var programs = map[string]program{
	Shred: {usage: "[PASSES]: overwrite $" + BlockDeviceVariable + " PASSES times (default 3) with random data, then once with zeroes",
		run: runShred},
	DDZero: {usage: "[PASSES]: overwrite $" + BlockDeviceVariable + " with zeroes, PASSES times (default 1)",
		run: runDDZero},
	BlkDiscard: {usage: ": discard every sector of $" + BlockDeviceVariable + "; fails on a device without discard support",
		run: runBlkDiscard},
	QuickReset: {usage: ": discard $" + BlockDeviceVariable + " if it supports discard, and zero the regions that hold partition tables and filesystem, RAID and LVM signatures",
		run: runQuickReset},
	FSClean: {usage: ": remove everything in the directory $" + FilesystemVariable + ", keeping the directory",
		run: runFSClean},
}

// Programs returns the names of the programs, sorted.
func Programs() []string {
	names := make([]string, 0, len(programs))
	for n := range programs {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// Paths returns where the image installs the programs, sorted.
func Paths() []string {
	var out []string
	for _, n := range Programs() {
		out = append(out, path.Join(Dir, n))
	}
	return out
}

// IsProgram reports whether name is the name of a program.
func IsProgram(name string) bool {
	_, ok := programs[name]
	return ok
}

// Main runs the program name with args and returns its exit status: 0 when
// it finished, 1 when it failed, 2 for bad arguments. Failures are written
// to stderr, prefixed with the program's name; progress goes to the logger
// of ctx.
func Main(ctx context.Context, name string, args []string, stderr io.Writer) int {
	return newRunner().main(ctx, name, args, stderr)
}

// runner holds what the programs take from the process, so that tests can
// replace it.
type runner struct {
	getenv    func(string) string
	open      func(path string) (Device, error)
	random    func() io.Reader
	mountInfo string
}

func newRunner() *runner {
	return &runner{getenv: os.Getenv, open: OpenBlockDevice, random: newRandom, mountInfo: discovery.SelfMountInfo}
}

// newRandom returns a fast random stream with a fresh seed: each pass
// writes different data.
func newRandom() io.Reader {
	var seed [32]byte
	_, _ = crand.Read(seed[:]) // crypto/rand.Read never returns an error.
	return mrand.NewChaCha8(seed)
}

// usageError is a bad invocation; Main exits with 2 and the usage.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func (r *runner) main(ctx context.Context, name string, args []string, stderr io.Writer) int {
	p, ok := programs[name]
	if !ok {
		fmt.Fprintf(stderr, "%s: not a cleaner program; the programs are %s\n", name, strings.Join(Programs(), ", "))
		return 2
	}
	if len(args) == 1 && (args[0] == "-h" || args[0] == "--help") {
		fmt.Fprintf(stderr, "usage: %s %s\n", name, p.usage)
		return 0
	}
	err := p.run(ctx, r, args)
	var ue usageError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "%s: %v\nusage: %s %s\n", name, err, name, p.usage)
		return 2
	}
	fmt.Fprintf(stderr, "%s: %v\n", name, err)
	return 1
}

// passCount parses the optional pass count argument.
func passCount(args []string, def, least int) (int, error) {
	switch len(args) {
	case 0:
		return def, nil
	case 1:
	default:
		return 0, usageError{fmt.Sprintf("too many arguments: %q", args)}
	}
	n, err := strconv.Atoi(args[0])
	if err != nil || n < least || n > maxPasses {
		return 0, usageError{fmt.Sprintf("the pass count must be a number from %d to %d, not %q", least, maxPasses, args[0])}
	}
	return n, nil
}

func noArgs(args []string) error {
	if len(args) > 0 {
		return usageError{fmt.Sprintf("takes no arguments, got %q", args)}
	}
	return nil
}

// withDevice opens the device named by BlockDeviceVariable, runs fn on it
// and closes it.
func (r *runner) withDevice(ctx context.Context, program string, fn func(Device) error) (err error) {
	p := r.getenv(BlockDeviceVariable)
	if p == "" {
		return fmt.Errorf("%s is not set: it names the block device to wipe", BlockDeviceVariable)
	}
	dev, err := r.open(p)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := dev.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("failed to close %s: %w", p, cerr)
		}
	}()
	klog.FromContext(ctx).Info("Wiping device", "program", program, "device", p, "bytes", dev.Size())
	return fn(dev)
}

func whole(dev Device) []span { return []span{{0, dev.Size()}} }

func runShred(ctx context.Context, r *runner, args []string) error {
	passes, err := passCount(args, 3, 0)
	if err != nil {
		return err
	}
	return r.withDevice(ctx, Shred, func(dev Device) error {
		for i := 1; i <= passes; i++ {
			if err := writePass(ctx, dev, whole(dev), randomFrom(r.random()), fmt.Sprintf("random pass %d/%d", i, passes)); err != nil {
				return err
			}
		}
		return writePass(ctx, dev, whole(dev), zeroes, "zero pass")
	})
}

func runDDZero(ctx context.Context, r *runner, args []string) error {
	passes, err := passCount(args, 1, 1)
	if err != nil {
		return err
	}
	return r.withDevice(ctx, DDZero, func(dev Device) error {
		for i := 1; i <= passes; i++ {
			if err := writePass(ctx, dev, whole(dev), zeroes, fmt.Sprintf("zero pass %d/%d", i, passes)); err != nil {
				return err
			}
		}
		return nil
	})
}

func runBlkDiscard(ctx context.Context, r *runner, args []string) error {
	if err := noArgs(args); err != nil {
		return err
	}
	return r.withDevice(ctx, BlkDiscard, func(dev Device) error {
		err := discardAll(ctx, dev)
		if errors.Is(err, ErrDiscardUnsupported) {
			return fmt.Errorf("%w; wipe this device with %s or %s instead", err, path.Join(Dir, Shred), path.Join(Dir, DDZero))
		}
		return err
	})
}

func runQuickReset(ctx context.Context, r *runner, args []string) error {
	if err := noArgs(args); err != nil {
		return err
	}
	return r.withDevice(ctx, QuickReset, func(dev Device) error {
		// Discard first: the zeroes written afterwards are then what the
		// signature regions read back, whatever the device returns for
		// discarded sectors.
		err := discardAll(ctx, dev)
		switch {
		case errors.Is(err, ErrDiscardUnsupported):
			klog.FromContext(ctx).Info("Device does not support discard, wiping its signatures only: its other sectors keep their data",
				"device", dev.Name())
		case err != nil:
			return err
		}
		return writePass(ctx, dev, signatureSpans(dev.Size()), zeroes, "signature wipe")
	})
}

func runFSClean(ctx context.Context, r *runner, args []string) error {
	if err := noArgs(args); err != nil {
		return err
	}
	dir := r.getenv(FilesystemVariable)
	if dir == "" {
		return fmt.Errorf("%s is not set: it names the directory to empty", FilesystemVariable)
	}
	return CleanDirectory(ctx, dir, r.mountInfo)
}
