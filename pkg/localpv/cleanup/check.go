package cleanup

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"k8s.io/klog/v2"

	"github.com/nodeplug/nodeplug/pkg/localpv/identity"
	"github.com/nodeplug/nodeplug/pkg/localpv/jobs"
	"github.com/nodeplug/nodeplug/pkg/localpv/report"
)

// Default places of the node's identity inside the cleanup container.
const (
	// DefaultMachineIDFile is where the cleanup Job mounts the host's
	// /etc/machine-id.
	DefaultMachineIDFile = jobs.MachineIDPath
	// DefaultSystemUUIDFile is the DMI product UUID, the kubelet's
	// systemUUID on most machines.
	DefaultSystemUUIDFile = "/sys/class/dmi/id/product_uuid"
)

// Expected is what a PV recorded of its machine and disk. An empty machine
// ID or system UUID was not recorded and is not checked.
type Expected struct {
	MachineID, SystemUUID string
	DiskID                identity.ID
}

// Volume is what a cleanup is about to wipe: the directory at Path, or for
// a block entry the device node Device that Path resolves to, open as File.
// The identity is read from File, which is what the wipe then goes through;
// Path and Device name it in messages.
type Volume struct {
	Kind   report.VolumeKind
	Path   string
	Device string
	File   *os.File
}

// MismatchError says that the node is another machine, or the volume's path
// leads to another disk, than the PV's; nothing may be wiped.
type MismatchError struct {
	// What is jobs.CleanupMismatchMachine or jobs.CleanupMismatchDisk.
	What string
	// Recorded and Found describe the PV's and the node's, for people.
	Recorded, Found string
}

func (e *MismatchError) Error() string {
	return e.What + ": recorded " + e.Recorded + ", found " + e.Found
}

// TerminationMessage is the cleanup Job's termination message for the
// mismatch, which the master recognises by its prefix.
func (e *MismatchError) TerminationMessage() string {
	return jobs.CleanupIdentityMismatch + e.Error()
}

// Checker proves, before a wipe, that the cleanup runs on the PV's machine
// and that the volume leads to the PV's disk. Both methods only read.
type Checker interface {
	// CheckMachine returns a *MismatchError when this node is not the
	// machine exp records, or when a machine is recorded and neither of its
	// identities can be read here. It returns nil when nothing is recorded.
	CheckMachine(ctx context.Context, exp Expected) error
	// CheckDisk returns a *MismatchError unless the identity of the open
	// volume vol.File is the same as want (identity.Compare), and any other
	// error when the identity cannot be read at all.
	CheckDisk(ctx context.Context, want identity.ID, vol Volume) error
}

// NodeChecker is the Checker of a cleanup container. Its fields are seams
// for tests; empty ones take the defaults.
type NodeChecker struct {
	// MachineIDFile holds the node's machine ID (DefaultMachineIDFile).
	MachineIDFile string
	// SystemUUIDFile holds the node's system UUID (DefaultSystemUUIDFile).
	SystemUUIDFile string
	// SysDir is the sysfs root that block devices are identified in.
	SysDir string
}

var _ Checker = &NodeChecker{}

// CheckMachine compares the recorded machine ID with MachineIDFile and the
// recorded system UUID with SystemUUIDFile, ignoring case and surrounding
// white space. An identity whose file cannot be read is skipped; at least
// one must be compared when any is recorded.
func (n *NodeChecker) CheckMachine(ctx context.Context, exp Expected) error {
	if exp.MachineID == "" && exp.SystemUUID == "" {
		return nil
	}
	logger := klog.FromContext(ctx)
	checked := false
	for _, c := range []struct{ name, want, file string }{
		{"machine ID", exp.MachineID, or(n.MachineIDFile, DefaultMachineIDFile)},
		{"system UUID", exp.SystemUUID, or(n.SystemUUIDFile, DefaultSystemUUIDFile)},
	} {
		if c.want == "" {
			continue
		}
		got, err := readMachineFile(c.file)
		if err != nil {
			logger.Info("Cannot read the node's identity, not comparing it", "identity", c.name, "err", err)
			continue
		}
		checked = true
		if !strings.EqualFold(got, c.want) {
			return &MismatchError{What: jobs.CleanupMismatchMachine, Recorded: c.name + " " + c.want, Found: c.name + " " + got}
		}
	}
	if !checked {
		return &MismatchError{What: jobs.CleanupMismatchMachine, Recorded: describe(exp),
			Found: "neither identity readable on the node: cannot prove the machine"}
	}
	return nil
}

// CheckDisk reads the identity of the open volume, in want's form where it
// has that form (identity.DirectoryFileAs): a directory's (its file
// system's UUID and its file handle) or a block device's (from sysfs, by the
// descriptor's device number), and compares it with want.
func (n *NodeChecker) CheckDisk(ctx context.Context, want identity.ID, vol Volume) error {
	var found identity.ID
	var err error
	switch {
	case vol.File == nil:
		err = errors.New("the volume is not open")
	case vol.Kind == report.KindDirectory:
		found, err = identity.DirectoryFileAs(vol.File, want)
	case vol.Kind == report.KindBlock:
		found, _, err = identity.DeviceFile(n.SysDir, vol.File)
	default:
		err = fmt.Errorf("unknown kind %q", vol.Kind)
	}
	if err != nil {
		return fmt.Errorf("failed to read the disk identity of %s: %w", vol.Path, err)
	}
	if m := identity.Compare(want, found); m != identity.Same {
		if found == "" {
			found = "no identity"
		}
		return &MismatchError{What: jobs.CleanupMismatchDisk, Recorded: string(want), Found: string(found)}
	}
	klog.FromContext(ctx).V(2).Info("Disk identity matches", "path", vol.Path, "device", vol.Device, "diskID", found)
	return nil
}

// maxMachineFile bounds what is read of a machine identity file.
const maxMachineFile = 128

// readMachineFile reads a one-line identity. An empty file and systemd's
// "uninitialized" (a machine ID not yet written) are not identities.
func readMachineFile(p string) (string, error) {
	f, err := os.Open(p)
	if err != nil {
		return "", err
	}
	defer func() { _ = f.Close() }()
	b, err := io.ReadAll(io.LimitReader(f, maxMachineFile))
	if err != nil {
		return "", fmt.Errorf("failed to read %s: %w", p, err)
	}
	s := strings.TrimSpace(string(b))
	if s == "" || s == "uninitialized" || strings.ContainsFunc(s, func(r rune) bool { return r <= ' ' || r > '~' }) {
		return "", errors.New(p + " holds no identity")
	}
	return s, nil
}

func describe(exp Expected) string {
	var parts []string
	if exp.MachineID != "" {
		parts = append(parts, "machine ID "+exp.MachineID)
	}
	if exp.SystemUUID != "" {
		parts = append(parts, "system UUID "+exp.SystemUUID)
	}
	return strings.Join(parts, " and ")
}

func or(s, def string) string {
	if s != "" {
		return s
	}
	return def
}
