package options

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/pflag"

	"github.com/nodeplug/nodeplug/pkg/localpv/cleanup"
	"github.com/nodeplug/nodeplug/pkg/localpv/discovery"
	"github.com/nodeplug/nodeplug/pkg/localpv/identity"
	"github.com/nodeplug/nodeplug/pkg/localpv/jobs"
	"github.com/nodeplug/nodeplug/pkg/localpv/report"
)

// DefaultTerminationLog is the terminationMessagePath of the master's Job
// containers. It is not the kubelet's default /dev/termination-log, because
// Jobs of block classes mount the host's /dev over the container's.
const DefaultTerminationLog = jobs.TerminationMessagePath

// DiscoverOptions are the flags of the discover Job entrypoint.
type DiscoverOptions struct {
	NodeName       string
	ClassesJSON    string
	Shard          int
	Shards         int
	TerminationLog string
	MountInfo      string
	HeldJSON       string
	HeldOmitted    int

	// Classes and Held are filled by Validate.
	Classes []discovery.ClassSpec
	Held    []discovery.HeldPath
}

// NewDiscoverOptions returns the defaults.
func NewDiscoverOptions() *DiscoverOptions {
	return &DiscoverOptions{NodeName: os.Getenv("NODE_NAME"), Shards: 1,
		TerminationLog: DefaultTerminationLog, MountInfo: discovery.SelfMountInfo}
}

// AddFlags registers the flags.
func (o *DiscoverOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.NodeName, "node-name", o.NodeName, "Node this Job runs on (default $NODE_NAME).")
	fs.StringVar(&o.ClassesJSON, "classes", o.ClassesJSON, "JSON list of the classes to scan, written by the master.")
	fs.IntVar(&o.Shard, "shard", o.Shard, "Index of this container's part of the report.")
	fs.IntVar(&o.Shards, "shards", o.Shards, fmt.Sprintf("Number of discovery containers in the pod (1-%d).", report.MaxShards))
	fs.StringVar(&o.TerminationLog, "termination-log", o.TerminationLog, "File the report is written to.")
	fs.StringVar(&o.MountInfo, "mountinfo", o.MountInfo, "Mount table to read.")
	fs.StringVar(&o.HeldJSON, "held-paths", o.HeldJSON, fmt.Sprintf(`JSON list of the node's other local PV paths to resolve, [{"p":"<host path>","c":"<path in this container, or empty>"}], at most %d, written by the master.`, report.MaxHeld))
	fs.IntVar(&o.HeldOmitted, "held-omitted", o.HeldOmitted, "Number of the node's other local PV paths beyond --held-paths' limit, which the report counts so that the master refuses to publish what they could hide.")
}

// Validate checks the flags and decodes --classes and --held-paths.
func (o *DiscoverOptions) Validate() error {
	var errs []error
	if o.NodeName == "" {
		errs = append(errs, errors.New("--node-name is required"))
	}
	if o.Shards < 1 || o.Shards > report.MaxShards {
		errs = append(errs, fmt.Errorf("--shards must be between 1 and %d", report.MaxShards))
	}
	if o.Shard < 0 || o.Shard >= o.Shards {
		errs = append(errs, fmt.Errorf("--shard must be between 0 and %d", o.Shards-1))
	}
	if err := json.Unmarshal([]byte(o.ClassesJSON), &o.Classes); err != nil {
		errs = append(errs, fmt.Errorf("--classes is not a JSON list of classes: %w", err))
	} else if len(o.Classes) == 0 {
		errs = append(errs, errors.New("--classes is empty"))
	}
	for _, c := range o.Classes {
		if c.Name == "" || !filepath.IsAbs(c.MountDir) || filepath.Clean(c.MountDir) != c.MountDir {
			errs = append(errs, fmt.Errorf("--classes: class %q needs a name and a clean absolute mountDir", c.Name))
		}
	}
	return errors.Join(append(errs, o.validateHeld())...)
}

func (o *DiscoverOptions) validateHeld() error {
	if o.HeldOmitted < 0 {
		return errors.New("--held-omitted must not be negative")
	}
	if o.HeldJSON == "" {
		return nil
	}
	if err := json.Unmarshal([]byte(o.HeldJSON), &o.Held); err != nil {
		return fmt.Errorf("--held-paths is not a JSON list of held paths: %w", err)
	}
	if len(o.Held) > report.MaxHeld {
		return fmt.Errorf("--held-paths lists %d paths, more than %d", len(o.Held), report.MaxHeld)
	}
	for _, h := range o.Held {
		if h.Path == "" || h.Container != "" && (!filepath.IsAbs(h.Container) || filepath.Clean(h.Container) != h.Container) {
			return fmt.Errorf("--held-paths: %q needs a host path, and a clean absolute container path or none", h.Path)
		}
	}
	return nil
}

// CleanupOptions are the flags of the cleanup Job entrypoint.
type CleanupOptions struct {
	Kind           string
	MountDir       string
	Path           string
	CommandJSON    string
	TerminationLog string
	MountInfo      string
	// MachineID, SystemUUID and DiskID are what the PV recorded of its
	// machine and disk; the cleanup checks them before it wipes.
	MachineID, SystemUUID, DiskID string
	// MachineIDFile and SystemUUIDFile are where the node's are read.
	MachineIDFile, SystemUUIDFile string

	// Command is filled by Validate.
	Command []string
}

// NewCleanupOptions returns the defaults.
func NewCleanupOptions() *CleanupOptions {
	return &CleanupOptions{TerminationLog: DefaultTerminationLog, MountInfo: discovery.SelfMountInfo,
		MachineIDFile: cleanup.DefaultMachineIDFile, SystemUUIDFile: cleanup.DefaultSystemUUIDFile}
}

// AddFlags registers the flags.
func (o *CleanupOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.Kind, "kind", o.Kind, `Kind of volume: "d" (directory) or "b" (block device).`)
	fs.StringVar(&o.MountDir, "mount-dir", o.MountDir, "Class directory inside the container.")
	fs.StringVar(&o.Path, "path", o.Path, "Volume inside the container; a direct child of --mount-dir.")
	fs.StringVar(&o.CommandJSON, "command", o.CommandJSON, "JSON argv of the block cleaner.")
	fs.StringVar(&o.TerminationLog, "termination-log", o.TerminationLog, "File a failure is written to.")
	fs.StringVar(&o.MountInfo, "mountinfo", o.MountInfo, "Mount table to read.")
	fs.StringVar(&o.MachineID, "machine-id", o.MachineID, "Machine ID the PV recorded; empty means none was recorded.")
	fs.StringVar(&o.SystemUUID, "system-uuid", o.SystemUUID, "System UUID the PV recorded; empty means none was recorded.")
	fs.StringVar(&o.DiskID, "disk-id", o.DiskID, "Disk identity the PV recorded (required): nothing is wiped unless the volume leads to it.")
	fs.StringVar(&o.MachineIDFile, "machine-id-file", o.MachineIDFile, "File holding the node's machine ID (the host's /etc/machine-id, mounted by the Job).")
	fs.StringVar(&o.SystemUUIDFile, "system-uuid-file", o.SystemUUIDFile, "File holding the node's system UUID.")
}

// maxMachineField bounds --machine-id and --system-uuid.
const maxMachineField = 128

// Validate checks the flags and decodes --command.
func (o *CleanupOptions) Validate() error {
	var errs []error
	if o.Kind != string(report.KindDirectory) && o.Kind != string(report.KindBlock) {
		errs = append(errs, fmt.Errorf("--kind must be %q or %q", report.KindDirectory, report.KindBlock))
	}
	if !filepath.IsAbs(o.MountDir) || !filepath.IsAbs(o.Path) {
		errs = append(errs, errors.New("--mount-dir and --path must be absolute"))
	}
	if o.CommandJSON != "" {
		if err := json.Unmarshal([]byte(o.CommandJSON), &o.Command); err != nil {
			errs = append(errs, fmt.Errorf("--command is not a JSON list of strings: %w", err))
		}
	}
	if o.Kind == string(report.KindBlock) && len(o.Command) == 0 {
		errs = append(errs, errors.New("--command is required for block volumes"))
	}
	if err := identity.ID(o.DiskID).Valid(); err != nil || o.DiskID == "" {
		errs = append(errs, fmt.Errorf("--disk-id is required and must be a disk identity: %q", o.DiskID))
	}
	for _, f := range []struct{ flag, value string }{{"--machine-id", o.MachineID}, {"--system-uuid", o.SystemUUID}} {
		if len(f.value) > maxMachineField || strings.ContainsFunc(f.value, func(r rune) bool { return r <= ' ' || r > '~' }) {
			errs = append(errs, fmt.Errorf("%s must be printable ASCII of at most %d bytes", f.flag, maxMachineField))
		}
	}
	return errors.Join(errs...)
}

// Expected returns what the PV recorded.
func (o *CleanupOptions) Expected() cleanup.Expected {
	return cleanup.Expected{MachineID: o.MachineID, SystemUUID: o.SystemUUID, DiskID: identity.ID(o.DiskID)}
}
