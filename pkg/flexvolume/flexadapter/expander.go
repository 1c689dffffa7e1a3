package flexadapter

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/kubernetes/pkg/volume"
	"k8s.io/kubernetes/pkg/volume/util"

	"github.com/nodeplug/nodeplug/pkg/flexvolume/driver"
)

// ExpandVolumeDevice is part of volume.ExpandableVolumePlugin. It runs
// "expandvolume <json> <devicePath> <newSize> <oldSize>" where, as upstream,
// devicePath is the device mount path.
func (p *plugin) ExpandVolumeDevice(spec *volume.Spec, newSize, oldSize resource.Quantity) (resource.Quantity, error) {
	if err := p.usable(); err != nil {
		return newSize, err
	}
	opts, err := driverOptions(spec)
	if err != nil {
		return newSize, err
	}
	devicePath, err := p.deviceMountPath(spec)
	if err != nil {
		return newSize, err
	}
	_, err = p.drv().ExpandVolume(p.ctx, opts, devicePath, newSize.Value(), oldSize.Value())
	if driver.IsNotSupported(err) {
		return newSize, nil
	}
	return newSize, err
}

// NodeExpand is part of volume.NodeExpandableVolumePlugin. It runs
// "expandfs <json> <devicePath> <deviceMountPath> <newSize> <oldSize>"; when
// the driver does not support it, the file system is resized in-tree.
func (p *plugin) NodeExpand(o volume.NodeResizeOptions) (bool, error) {
	if err := p.usable(); err != nil {
		return false, err
	}
	if o.VolumeSpec == nil || o.VolumeSpec.PersistentVolume == nil {
		return false, fmt.Errorf("flexvolume expandfs needs a PersistentVolume")
	}
	opts, err := driverOptions(o.VolumeSpec)
	if err != nil {
		return false, err
	}
	err = p.drv().ExpandFS(p.ctx, opts, o.DevicePath, o.DeviceMountPath, o.NewSize.Value(), o.OldSize.Value())
	if driver.IsNotSupported(err) {
		return p.resizeInTree(o)
	}
	if err != nil {
		return false, err
	}
	return true, nil
}

func (p *plugin) resizeInTree(o volume.NodeResizeOptions) (bool, error) {
	fsVolume, err := util.CheckVolumeModeFilesystem(o.VolumeSpec)
	if err != nil {
		return false, fmt.Errorf("checking the volume mode: %w", err)
	}
	if !fsVolume {
		return true, nil
	}
	if _, err := util.GenericResizeFS(p.host, o.DevicePath, o.DeviceMountPath); err != nil {
		return false, err
	}
	return true, nil
}
