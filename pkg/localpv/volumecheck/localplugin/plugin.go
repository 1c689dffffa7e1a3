package localplugin

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/kubernetes/pkg/volume"

	"github.com/nodeplug/nodeplug/pkg/localpv/volumecheck"
	"github.com/nodeplug/nodeplug/pkg/mountpod/localadapter"
)

// PluginName is upstream's local plugin name.
const PluginName = localadapter.PluginName

// Wrap returns plugins with the local plugin replaced by one that proves
// each PV's disk with check before a pod sees it. It returns an error if
// there is no local plugin.
func Wrap(plugins []volume.VolumePlugin, check volumecheck.Checker) ([]volume.VolumePlugin, error) {
	return localadapter.WrapLocal(plugins, func(up localadapter.Local) localadapter.Local {
		return &plugin{upstreamLocal: up, check: check}
	})
}

// upstreamLocal names the embedded plugin in this package's wrapper.
type upstreamLocal = localadapter.Local

type plugin struct {
	upstreamLocal
	check volumecheck.Checker
}

var _ upstreamLocal = &plugin{}

// These methods appear in two embedded interfaces; naming them resolves
// the ambiguity.
func (p *plugin) RequiresFSResize() bool { return p.upstreamLocal.RequiresFSResize() }
func (p *plugin) NewBlockVolumeUnmapper(name string, uid types.UID) (volume.BlockVolumeUnmapper, error) {
	return p.upstreamLocal.NewBlockVolumeUnmapper(name, uid)
}

// NewMounter returns the wrapped plugin's mounter, proving the disk before
// SetUp.
func (p *plugin) NewMounter(spec *volume.Spec, pod *v1.Pod) (volume.Mounter, error) {
	m, err := p.upstreamLocal.NewMounter(spec, pod)
	if err != nil {
		return nil, err
	}
	p.check.Observe(spec.PersistentVolume)
	return &mounter{Mounter: m, plugin: p, spec: spec}, nil
}

// NewBlockVolumeMapper returns the wrapped plugin's mapper, proving the
// device before it is set up and mapped.
func (p *plugin) NewBlockVolumeMapper(spec *volume.Spec, pod *v1.Pod) (volume.BlockVolumeMapper, error) {
	m, err := p.upstreamLocal.NewBlockVolumeMapper(spec, pod)
	if err != nil {
		return nil, err
	}
	custom, ok := m.(volume.CustomBlockVolumeMapper)
	if !ok {
		return nil, fmt.Errorf("the %s plugin's block volume mapper no longer implements the interface nodeplug wraps", PluginName)
	}
	p.check.Observe(spec.PersistentVolume)
	return &mapper{CustomBlockVolumeMapper: custom, check: p.check, pv: spec.PersistentVolume}, nil
}

// NewDeviceMounter returns the wrapped plugin's device mounter, proving a
// block device before it is formatted or mounted.
func (p *plugin) NewDeviceMounter() (volume.DeviceMounter, error) {
	dm, err := p.upstreamLocal.NewDeviceMounter()
	if err != nil {
		return nil, err
	}
	return &deviceMounter{DeviceMounter: dm, check: p.check}, nil
}

type mounter struct {
	volume.Mounter
	plugin *plugin
	spec   *volume.Spec
}

func (m *mounter) SetUp(args volume.MounterArgs) error {
	if err := m.prove(); err != nil {
		return err
	}
	return m.Mounter.SetUp(args)
}

func (m *mounter) SetUpAt(dir string, args volume.MounterArgs) error {
	if err := m.prove(); err != nil {
		return err
	}
	return m.Mounter.SetUpAt(dir, args)
}

// prove checks the PV's path and, for a block device, that the device
// mount path the pod's bind mount comes from holds its file system.
func (m *mounter) prove() error {
	pv := m.spec.PersistentVolume
	if err := m.plugin.check.Check(pv); err != nil {
		return err
	}
	if pv == nil || pv.Spec.Local == nil || m.plugin.check.Recorded(pv) == "" {
		return nil
	}
	if _, isDev, err := volumecheck.ResolveDevice(pv.Spec.Local.Path); err != nil || !isDev {
		return nil
	}
	dm, err := m.plugin.upstreamLocal.NewDeviceMounter()
	if err != nil {
		return err
	}
	mountPath, err := dm.GetDeviceMountPath(m.spec)
	if err != nil {
		return err
	}
	return m.plugin.check.CheckMounted(pv, mountPath)
}

type deviceMounter struct {
	volume.DeviceMounter
	check volumecheck.Checker
}

// MountDevice proves a block device before the wrapped MountDevice
// formats or mounts it.
func (d *deviceMounter) MountDevice(spec *volume.Spec, devicePath, deviceMountPath string, args volume.DeviceMounterArgs) error {
	if err := d.ProveDevice(spec); err != nil {
		return err
	}
	return d.DeviceMounter.MountDevice(spec, devicePath, deviceMountPath, args)
}

// ProveDevice checks a PV whose path is (or cannot be resolved as) a block
// device; a directory is left to SetUp. pkg/mountpod/localadapter, which
// formats and mounts block devices itself when it wraps this plugin, calls
// it first (localadapter.DeviceProver).
func (d *deviceMounter) ProveDevice(spec *volume.Spec) error {
	pv := spec.PersistentVolume
	if pv == nil || pv.Spec.Local == nil {
		return nil
	}
	if _, isDev, err := volumecheck.ResolveDevice(pv.Spec.Local.Path); err == nil && !isDev {
		return nil
	}
	return d.check.Check(pv)
}

type mapper struct {
	volume.CustomBlockVolumeMapper
	check volumecheck.Checker
	pv    *v1.PersistentVolume
}

func (m *mapper) SetUpDevice() (string, error) {
	if err := m.check.Check(m.pv); err != nil {
		return "", err
	}
	return m.CustomBlockVolumeMapper.SetUpDevice()
}

func (m *mapper) MapPodDevice() (string, error) {
	if err := m.check.Check(m.pv); err != nil {
		return "", err
	}
	return m.CustomBlockVolumeMapper.MapPodDevice()
}

var _ localadapter.DeviceProver = &deviceMounter{}
