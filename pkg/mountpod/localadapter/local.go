package localadapter

import (
	"errors"
	"fmt"
	"os"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/kubernetes/pkg/volume"
	"k8s.io/kubernetes/pkg/volume/util"
	"k8s.io/mount-utils"
	utilexec "k8s.io/utils/exec"
)

// PluginName is upstream's local plugin name.
const PluginName = "kubernetes.io/local-volume"

const defaultFSType = "ext4"

// Operation returns, resolved once, the mounter and the exec that run one
// format-and-mount of plugin (blkid, mkfs, fsck and mount) in one place:
// the plugin's mount pod or the host. pkg/mountpod/mounter's
// Mounter.Operation is the kubelet's.
type Operation func(plugin string) (mount.Interface, utilexec.Interface, error)

// Wrap returns plugins with the local plugin replaced by one that formats
// and mounts block-backed PVs through op. It returns an error if there is
// no local plugin.
func Wrap(plugins []volume.VolumePlugin, op Operation) ([]volume.VolumePlugin, error) {
	return WrapLocal(plugins, func(up Local) Local { return &plugin{upstreamLocal: up, op: op} })
}

// WrapLocal returns plugins with upstream's local plugin replaced by what
// wrap makes of it. Each design that changes the local plugin (mount pods,
// the local PV identity check) wraps it through here, so that the wrappers
// compose in either order. It returns an error if there is no local plugin
// or it no longer implements Local.
func WrapLocal(plugins []volume.VolumePlugin, wrap func(Local) Local) ([]volume.VolumePlugin, error) {
	out := make([]volume.VolumePlugin, len(plugins))
	found := false
	for i, p := range plugins {
		out[i] = p
		if p.GetPluginName() != PluginName {
			continue
		}
		up, ok := p.(Local)
		if !ok {
			return nil, fmt.Errorf("upstream's %s plugin no longer implements the interfaces nodeplug wraps", PluginName)
		}
		out[i] = wrap(up)
		found = true
	}
	if !found {
		return nil, fmt.Errorf("no %s plugin among the kubelet's volume plugins", PluginName)
	}
	return out, nil
}

// Local is every interface upstream's local plugin implements, and so
// every interface a wrapper of it must keep.
type Local interface {
	volume.VolumePlugin
	volume.PersistentVolumePlugin
	volume.BlockVolumePlugin
	volume.NodeExpandableVolumePlugin
	volume.DeviceMountableVolumePlugin
}

// upstreamLocal names the embedded plugin in this package's wrapper.
type upstreamLocal = Local

type plugin struct {
	upstreamLocal
	op Operation
}

var _ upstreamLocal = &plugin{}

// These methods appear in two embedded interfaces; naming them resolves
// the ambiguity.
func (p *plugin) RequiresFSResize() bool { return p.upstreamLocal.RequiresFSResize() }
func (p *plugin) NewBlockVolumeMapper(spec *volume.Spec, pod *v1.Pod) (volume.BlockVolumeMapper, error) {
	return p.upstreamLocal.NewBlockVolumeMapper(spec, pod)
}
func (p *plugin) NewBlockVolumeUnmapper(name string, uid types.UID) (volume.BlockVolumeUnmapper, error) {
	return p.upstreamLocal.NewBlockVolumeUnmapper(name, uid)
}

func (p *plugin) NewDeviceMounter() (volume.DeviceMounter, error) {
	up, err := p.upstreamLocal.NewDeviceMounter()
	if err != nil {
		return nil, err
	}
	return &deviceMounter{DeviceMounter: up, op: p.op}, nil
}

type deviceMounter struct {
	volume.DeviceMounter
	op Operation
}

// DeviceProver is implemented by a wrapped plugin's DeviceMounter that must
// approve a block device before anything formats or mounts it (the local
// PV identity check, pkg/localpv/volumecheck/localplugin). MountDevice
// formats and mounts block devices itself, so it asks the prover first.
type DeviceProver interface {
	ProveDevice(spec *volume.Spec) error
}

// MountDevice formats (if blank) and mounts a block-backed local PV where
// one Operation resolves to, once the wrapped DeviceMounter (if it is a
// DeviceProver) approves the device; other paths are upstream's.
func (d *deviceMounter) MountDevice(spec *volume.Spec, devicePath, deviceMountPath string, args volume.DeviceMounterArgs) error {
	src := localSource(spec)
	if src == nil || src.Path == "" {
		return d.DeviceMounter.MountDevice(spec, devicePath, deviceMountPath, args)
	}
	fi, err := os.Stat(src.Path)
	if err != nil || fi.Mode()&os.ModeDevice == 0 || fi.Mode()&os.ModeCharDevice != 0 {
		return d.DeviceMounter.MountDevice(spec, devicePath, deviceMountPath, args)
	}
	if p, ok := d.DeviceMounter.(DeviceProver); ok {
		if err := p.ProveDevice(spec); err != nil {
			return err
		}
	}
	return d.formatAndMount(spec, src, deviceMountPath)
}

func localSource(spec *volume.Spec) *v1.LocalVolumeSource {
	if spec == nil || spec.PersistentVolume == nil {
		return nil
	}
	return spec.PersistentVolume.Spec.Local
}

func (d *deviceMounter) formatAndMount(spec *volume.Spec, src *v1.LocalVolumeSource, target string) error {
	mounter, exec, err := d.op(PluginName)
	if err != nil {
		return fmt.Errorf("local: formatting and mounting %s at %s: %w", src.Path, target, err)
	}
	notMnt, err := mounter.IsLikelyNotMountPoint(target)
	switch {
	case errors.Is(err, os.ErrNotExist):
		if err := os.MkdirAll(target, 0o750); err != nil {
			return fmt.Errorf("local: creating %s: %w", target, err)
		}
	case err != nil:
		return fmt.Errorf("local: checking %s: %w", target, err)
	case !notMnt:
		return nil
	}
	fstype := defaultFSType
	if src.FSType != nil && *src.FSType != "" {
		fstype = *src.FSType
	}
	var base []string
	if spec.ReadOnly {
		base = append(base, "ro")
	}
	options := util.MountOptionFromSpec(spec, base...)
	sfm := mount.NewSafeFormatAndMount(mounter, exec)
	if err := sfm.FormatAndMount(src.Path, target, fstype, options); err != nil {
		if rmErr := os.Remove(target); rmErr != nil && !errors.Is(rmErr, os.ErrNotExist) {
			err = errors.Join(err, fmt.Errorf("removing %s: %w", target, rmErr))
		}
		return fmt.Errorf("local: formatting and mounting %s at %s (fsType %s): %w", src.Path, target, fstype, err)
	}
	return nil
}
