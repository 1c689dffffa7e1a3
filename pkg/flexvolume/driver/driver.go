package driver

import (
	"context"
	"strconv"
	"sync/atomic"
	"time"

	utilexec "k8s.io/utils/exec"
)

// Driver runs the commands of one driver executable. Methods are safe for
// concurrent use. Each returns an error wrapping ErrNotSupported when the
// driver answered "Not supported"; callers then use the in-tree default.
type Driver interface {
	// ExecPath returns the executable's path.
	ExecPath() string
	// Init runs "init" and returns the driver's capabilities.
	Init(ctx context.Context) (Capabilities, error)
	// GetVolumeName runs "getvolumename <json>" and returns the volumeName
	// the driver reported, which may be empty.
	GetVolumeName(ctx context.Context, opts *VolumeOptions) (string, error)
	// Attach runs "attach <json> <nodeName>" and returns the device path.
	Attach(ctx context.Context, opts *VolumeOptions, nodeName string) (string, error)
	// Detach runs "detach <volumeName> <nodeName>".
	Detach(ctx context.Context, volumeName, nodeName string) error
	// WaitForAttach runs "waitforattach <devicePath> <json>" with the given
	// timeout (the default call timeout when zero) and returns the device path.
	WaitForAttach(ctx context.Context, devicePath string, opts *VolumeOptions, timeout time.Duration) (string, error)
	// IsAttached runs "isattached <json> <nodeName>".
	IsAttached(ctx context.Context, opts *VolumeOptions, nodeName string) (bool, error)
	// MountDevice runs "mountdevice <deviceMountPath> <devicePath> <json>".
	MountDevice(ctx context.Context, deviceMountPath, devicePath string, opts *VolumeOptions) error
	// UnmountDevice runs "unmountdevice <deviceMountPath>".
	UnmountDevice(ctx context.Context, deviceMountPath string) error
	// Mount runs "mount <dir> <json>".
	Mount(ctx context.Context, dir string, opts *VolumeOptions) error
	// Unmount runs "unmount <dir>".
	Unmount(ctx context.Context, dir string) error
	// ExpandVolume runs "expandvolume <json> <devicePath> <newSize> <oldSize>"
	// (sizes in bytes) and returns the size the driver reported, or 0.
	ExpandVolume(ctx context.Context, opts *VolumeOptions, devicePath string, newSize, oldSize int64) (int64, error)
	// ExpandFS runs "expandfs <json> <devicePath> <deviceMountPath> <newSize> <oldSize>".
	ExpandFS(ctx context.Context, opts *VolumeOptions, devicePath, deviceMountPath string, newSize, oldSize int64) error
	// Call runs any command with the given arguments. A zero timeout means
	// the default for the command.
	Call(ctx context.Context, cmd Command, timeout time.Duration, args ...string) (*Response, error)
}

// Config tunes a Driver. Zero values mean the package defaults.
type Config struct {
	// InitTimeout bounds "init" (DefaultInitTimeout).
	InitTimeout time.Duration
	// CallTimeout bounds every other command; 0 is none
	// (DefaultCallTimeout, upstream's contract).
	CallTimeout time.Duration
	// MaxOutputBytes bounds each output stream (MaxOutputBytes).
	MaxOutputBytes int
	// KillGrace bounds the wait for a killed driver (DefaultKillGrace).
	KillGrace time.Duration
}

func (c Config) withDefaults() Config {
	if c.InitTimeout <= 0 {
		c.InitTimeout = DefaultInitTimeout
	}
	c.CallTimeout = max(c.CallTimeout, DefaultCallTimeout)
	if c.MaxOutputBytes <= 0 {
		c.MaxOutputBytes = MaxOutputBytes
	}
	if c.KillGrace <= 0 {
		c.KillGrace = DefaultKillGrace
	}
	return c
}

type driver struct {
	execPath string
	runner   utilexec.Interface
	cfg      Config
	// unsupported has bit Command.index() set once the driver answered
	// "Not supported" for that command.
	unsupported atomic.Uint32
}

var _ Driver = &driver{}

// New returns a Driver for the executable at execPath, run through runner.
func New(execPath string, runner utilexec.Interface, cfg Config) Driver {
	return &driver{execPath: execPath, runner: runner, cfg: cfg.withDefaults()}
}

func (d *driver) ExecPath() string { return d.execPath }

func (d *driver) Init(ctx context.Context) (Capabilities, error) {
	r, err := d.Call(ctx, CmdInit, 0)
	if err != nil {
		return Capabilities{}, err
	}
	return *r.Capabilities, nil
}

func (d *driver) GetVolumeName(ctx context.Context, opts *VolumeOptions) (string, error) {
	r, err := d.callWithOptions(ctx, CmdGetVolumeName, 0, nil, opts)
	if err != nil {
		return "", err
	}
	return r.VolumeName, nil
}

func (d *driver) Attach(ctx context.Context, opts *VolumeOptions, nodeName string) (string, error) {
	r, err := d.callWithOptions(ctx, CmdAttach, 0, nil, opts, nodeName)
	if err != nil {
		return "", err
	}
	return r.DevicePath, nil
}

func (d *driver) Detach(ctx context.Context, volumeName, nodeName string) error {
	_, err := d.Call(ctx, CmdDetach, 0, volumeName, nodeName)
	return err
}

func (d *driver) WaitForAttach(ctx context.Context, devicePath string, opts *VolumeOptions, timeout time.Duration) (string, error) {
	r, err := d.callWithOptions(ctx, CmdWaitForAttach, timeout, []string{devicePath}, opts)
	if err != nil {
		return "", err
	}
	return r.DevicePath, nil
}

func (d *driver) IsAttached(ctx context.Context, opts *VolumeOptions, nodeName string) (bool, error) {
	r, err := d.callWithOptions(ctx, CmdIsAttached, 0, nil, opts, nodeName)
	if err != nil {
		return false, err
	}
	return r.Attached, nil
}

func (d *driver) MountDevice(ctx context.Context, deviceMountPath, devicePath string, opts *VolumeOptions) error {
	_, err := d.callWithOptions(ctx, CmdMountDevice, 0, []string{deviceMountPath, devicePath}, opts)
	return err
}

func (d *driver) UnmountDevice(ctx context.Context, deviceMountPath string) error {
	_, err := d.Call(ctx, CmdUnmountDevice, 0, deviceMountPath)
	return err
}

func (d *driver) Mount(ctx context.Context, dir string, opts *VolumeOptions) error {
	_, err := d.callWithOptions(ctx, CmdMount, 0, []string{dir}, opts)
	return err
}

func (d *driver) Unmount(ctx context.Context, dir string) error {
	_, err := d.Call(ctx, CmdUnmount, 0, dir)
	return err
}

func (d *driver) ExpandVolume(ctx context.Context, opts *VolumeOptions, devicePath string, newSize, oldSize int64) (int64, error) {
	r, err := d.callWithOptions(ctx, CmdExpandVolume, 0, nil, opts,
		devicePath, strconv.FormatInt(newSize, 10), strconv.FormatInt(oldSize, 10))
	if err != nil {
		return 0, err
	}
	return r.VolumeNewSize, nil
}

func (d *driver) ExpandFS(ctx context.Context, opts *VolumeOptions, devicePath, deviceMountPath string, newSize, oldSize int64) error {
	_, err := d.callWithOptions(ctx, CmdExpandFS, 0, nil, opts,
		devicePath, deviceMountPath, strconv.FormatInt(newSize, 10), strconv.FormatInt(oldSize, 10))
	return err
}

// callWithOptions runs cmd with the arguments before, the options JSON, then
// the arguments after.
func (d *driver) callWithOptions(ctx context.Context, cmd Command, timeout time.Duration, before []string, opts *VolumeOptions, after ...string) (*Response, error) {
	if opts == nil {
		opts = &VolumeOptions{}
	}
	js, err := opts.JSON()
	if err != nil {
		return nil, &CallError{ExecPath: d.execPath, Command: cmd, ExitCode: -1, Err: err}
	}
	args := make([]string, 0, len(before)+1+len(after))
	args = append(args, before...)
	args = append(args, js)
	args = append(args, after...)
	return d.Call(ctx, cmd, timeout, args...)
}

func (d *driver) isUnsupported(cmd Command) bool {
	i := cmd.index()
	return i >= 0 && d.unsupported.Load()&(1<<i) != 0
}

func (d *driver) markUnsupported(cmd Command) {
	if i := cmd.index(); i >= 0 {
		d.unsupported.Or(1 << i)
	}
}
