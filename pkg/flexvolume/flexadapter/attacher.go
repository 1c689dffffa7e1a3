package flexadapter

import (
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/kubernetes/pkg/volume"
	"k8s.io/mount-utils"
	utilexec "k8s.io/utils/exec"

	"github.com/nodeplug/nodeplug/pkg/flexvolume/driver"
)

// attacher runs attach, isattached, waitforattach and mountdevice.
type attacher struct {
	*plugin
}

var (
	_ volume.Attacher      = &attacher{}
	_ volume.DeviceMounter = &attacher{}
)

// Attach runs "attach <json> <nodeName>" and returns the device path.
func (a *attacher) Attach(spec *volume.Spec, nodeName types.NodeName) (string, error) {
	if err := a.usable(); err != nil {
		return "", err
	}
	opts, err := driverOptions(spec)
	if err != nil {
		return "", err
	}
	dev, err := a.drv().Attach(a.ctx, opts, string(nodeName))
	if driver.IsNotSupported(err) {
		return "", nil
	}
	return dev, err
}

// VolumesAreAttached runs "isattached <json> <nodeName>" per spec. As
// upstream, a driver without isattached makes the whole answer nil, nil.
func (a *attacher) VolumesAreAttached(specs []*volume.Spec, nodeName types.NodeName) (map[*volume.Spec]bool, error) {
	out := make(map[*volume.Spec]bool, len(specs))
	for _, spec := range specs {
		opts, err := driverOptions(spec)
		if err != nil {
			return nil, err
		}
		attached, err := a.drv().IsAttached(a.ctx, opts, string(nodeName))
		if driver.IsNotSupported(err) {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		out[spec] = attached
	}
	return out, nil
}

// WaitForAttach runs "waitforattach <devicePath> <json>" bounded by timeout.
func (a *attacher) WaitForAttach(spec *volume.Spec, devicePath string, _ *v1.Pod, timeout time.Duration) (string, error) {
	if err := a.usable(); err != nil {
		return "", err
	}
	opts, err := driverOptions(spec)
	if err != nil {
		return "", err
	}
	dev, err := a.drv().WaitForAttach(a.ctx, devicePath, opts, timeout)
	if driver.IsNotSupported(err) {
		return devicePath, nil
	}
	return dev, err
}

func (a *attacher) GetDeviceMountPath(spec *volume.Spec) (string, error) {
	return a.deviceMountPath(spec)
}

// MountDevice runs "mountdevice <deviceMountPath> <devicePath> <json>". When
// the driver does not support it and there is a device, the device is
// formatted if needed and mounted in-tree.
func (a *attacher) MountDevice(spec *volume.Spec, devicePath, deviceMountPath string, _ volume.DeviceMounterArgs) error {
	if err := a.usable(); err != nil {
		return err
	}
	opts, err := driverOptions(spec)
	if err != nil {
		return err
	}
	mounted, call, err := a.beginMount(deviceMountPath)
	if err != nil || mounted {
		return err
	}
	err = a.drv().MountDevice(call.ctx, deviceMountPath, devicePath, opts)
	if !driver.IsNotSupported(err) {
		return a.endMount(deviceMountPath, call, err)
	}
	if err := a.clearPending(deviceMountPath, nil); err != nil || devicePath == "" {
		return err
	}
	mode := "rw"
	if opts.ReadOnly {
		mode = "ro"
	}
	fm, err := a.formatter()
	if err != nil {
		return err
	}
	if err := fm.FormatAndMount(devicePath, deviceMountPath, opts.FSType, []string{mode}); err != nil {
		return fmt.Errorf("formatting and mounting %s at %s: %w", devicePath, deviceMountPath, err)
	}
	return nil
}

// detacher runs detach and unmountdevice, for drivers in every state.
type detacher struct {
	*plugin
}

var (
	_ volume.Detacher        = &detacher{}
	_ volume.DeviceUnmounter = &detacher{}
)

// Detach runs "detach <volumeName> <nodeName>".
func (d *detacher) Detach(volumeName string, nodeName types.NodeName) error {
	err := d.drv().Detach(d.ctx, volumeName, string(nodeName))
	if teardownFallback(err) {
		d.logger().V(2).Info("Detach not run by the driver", "volume", volumeName, "node", nodeName, "reason", err)
		return nil
	}
	return err
}

// UnmountDevice runs "unmountdevice <deviceMountPath>" if something is
// mounted there, then removes the directory.
func (d *detacher) UnmountDevice(deviceMountPath string) error {
	exists, err := mount.PathExists(deviceMountPath)
	if err == nil && !exists {
		d.logger().V(2).Info("Flexvolume unmountdevice skipped: path does not exist", "path", deviceMountPath)
		return nil
	}
	if err != nil && !mount.IsCorruptedMnt(err) {
		return fmt.Errorf("checking %s: %w", deviceMountPath, err)
	}
	notMnt, err := d.host.GetMounter().IsLikelyNotMountPoint(deviceMountPath)
	if err != nil && !mount.IsCorruptedMnt(err) {
		return err
	}
	if err != nil || !notMnt {
		err = d.drv().UnmountDevice(d.ctx, deviceMountPath)
		if teardownFallback(err) {
			err = mount.CleanupMountPoint(deviceMountPath, d.host.GetMounter(), false)
		}
		if err != nil {
			return err
		}
	}
	return removeIfExists(deviceMountPath)
}

// operator is what the kubelet's mounter offers when mount pods are on
// (pkg/mountpod/mounter): one decision of pod or host for every utility of
// an operation that runs several.
type operator interface {
	Operation(plugin string) (mount.Interface, utilexec.Interface, error)
}

// formatter returns the format-and-mount of a driver that does not support
// mountdevice. With mount pods, its blkid, mkfs, fsck and mount are one
// operation: resolved once, in the pod that serves the driver, or on the
// host when none does (pkg/mountpod/README.md, "Pod or host").
func (a *attacher) formatter() (*mount.SafeFormatAndMount, error) {
	if o, ok := a.host.GetMounter().(operator); ok {
		mnt, exec, err := o.Operation(a.entry.Name)
		if err != nil {
			return nil, fmt.Errorf("formatting for flexvolume driver %s: %w", a.entry.Name, err)
		}
		return &mount.SafeFormatAndMount{Interface: mnt, Exec: exec}, nil
	}
	return &mount.SafeFormatAndMount{Interface: a.host.GetMounter(), Exec: a.src.runner}, nil
}
