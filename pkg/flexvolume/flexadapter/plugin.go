package flexadapter

import (
	"context"
	"fmt"
	"path/filepath"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/pkg/volume"
	utilstrings "k8s.io/utils/strings"

	"github.com/nodeplug/nodeplug/pkg/flexvolume/driver"
	"github.com/nodeplug/nodeplug/pkg/flexvolume/prober"
)

// inTreePluginName is the name upstream files flexvolume device mounts under.
const inTreePluginName = "kubernetes.io/flexvolume"

// plugin is a flexvolume driver that does not attach.
type plugin struct {
	ctx   context.Context
	src   *Source
	entry *prober.Entry
	host  volume.VolumeHost
}

// attachablePlugin is a flexvolume driver that attaches.
type attachablePlugin struct {
	*plugin
}

var (
	_ volume.VolumePlugin               = &plugin{}
	_ volume.PersistentVolumePlugin     = &plugin{}
	_ volume.ExpandableVolumePlugin     = &plugin{}
	_ volume.NodeExpandableVolumePlugin = &plugin{}

	_ volume.AttachableVolumePlugin      = &attachablePlugin{}
	_ volume.DeviceMountableVolumePlugin = &attachablePlugin{}
	_ volume.PersistentVolumePlugin      = &attachablePlugin{}
	_ volume.ExpandableVolumePlugin      = &attachablePlugin{}
	_ volume.NodeExpandableVolumePlugin  = &attachablePlugin{}
)

// newPlugin returns the plugin object for one published entry: attachable or
// not, as its capabilities say.
func newPlugin(src *Source, e *prober.Entry) volume.VolumePlugin {
	p := &plugin{ctx: src.ctx, src: src, entry: e}
	if e.Capabilities.Attach {
		return &attachablePlugin{plugin: p}
	}
	return p
}

func (p *plugin) drv() driver.Driver { return p.entry.Driver }

// usable returns an error unless the driver may be used for new work.
// Teardown does not ask.
func (p *plugin) usable() error {
	if p.entry.State == prober.StateReady {
		return nil
	}
	return fmt.Errorf("flexvolume driver %s is %s and is not used for new volumes: %w",
		p.entry.Name, p.entry.State, p.entry.Err)
}

func (p *plugin) logger() klog.Logger {
	return klog.FromContext(p.ctx).WithValues("driver", p.entry.Name)
}

// Init is part of volume.VolumePlugin. The driver's own init already ran.
func (p *plugin) Init(host volume.VolumeHost) error {
	p.host = host
	return nil
}

func (p *plugin) GetPluginName() string { return p.entry.Name }

// GetVolumeName is part of volume.VolumePlugin. As upstream, the driver's
// getvolumename is called but its answer is not used: the name is the
// spec's, which keeps unique volume names stable across driver versions.
// A driver that is not ready is not called.
func (p *plugin) GetVolumeName(spec *volume.Spec) (string, error) {
	if p.usable() == nil {
		opts, err := driverOptions(spec)
		if err != nil {
			return "", err
		}
		if _, err := p.drv().GetVolumeName(p.ctx, opts); err != nil && !driver.IsNotSupported(err) {
			return "", err
		}
	}
	return spec.Name(), nil
}

func (p *plugin) CanSupport(spec *volume.Spec) bool {
	fs, err := getFlexSpec(spec)
	return err == nil && fs.driver == p.entry.Name
}

func (p *plugin) RequiresRemount(*volume.Spec) bool { return false }
func (p *plugin) SupportsMountOption() bool         { return false }

func (p *plugin) SupportsSELinuxContextMount(*volume.Spec) (bool, error) { return false, nil }

func (p *plugin) GetAccessModes() []v1.PersistentVolumeAccessMode {
	return []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce, v1.ReadOnlyMany}
}

func (p *plugin) NewMounter(spec *volume.Spec, pod *v1.Pod) (volume.Mounter, error) {
	if err := p.usable(); err != nil {
		return nil, err
	}
	fs, err := getFlexSpec(spec)
	if err != nil {
		return nil, err
	}
	return &mounter{
		volumeBase: p.newVolumeBase(pod.UID, spec.Name()),
		spec:       spec, pod: pod, readOnly: fs.readOnly,
	}, nil
}

func (p *plugin) NewUnmounter(volName string, podUID types.UID) (volume.Unmounter, error) {
	return &unmounter{volumeBase: p.newVolumeBase(podUID, volName)}, nil
}

func (p *plugin) ConstructVolumeSpec(volumeName, _ string) (volume.ReconstructedVolume, error) {
	vol := &v1.Volume{
		Name:         volumeName,
		VolumeSource: v1.VolumeSource{FlexVolume: &v1.FlexVolumeSource{Driver: p.entry.Name}},
	}
	return volume.ReconstructedVolume{Spec: volume.NewSpecFromVolume(vol)}, nil
}

func (p *plugin) RequiresFSResize() bool { return p.entry.Capabilities.RequiresFSResize }

// deviceMountPath is where an attachable volume's device is mounted, and
// where the in-tree mount fallback binds from.
func (p *plugin) deviceMountPath(spec *volume.Spec) (string, error) {
	name, err := p.GetVolumeName(spec)
	if err != nil {
		return "", fmt.Errorf("getting the volume name for the device mount path: %w", err)
	}
	return filepath.Join(p.host.GetPluginDir(inTreePluginName), p.entry.Name, "mounts", name), nil
}

func (p *plugin) newVolumeBase(podUID types.UID, volName string) *volumeBase {
	var metrics volume.MetricsProvider = &volume.MetricsNil{}
	dir := p.host.GetPodVolumeDir(podUID, utilstrings.EscapeQualifiedName(p.entry.Name), volName)
	if p.entry.Capabilities.SupportsMetrics {
		metrics = volume.NewMetricsStatFS(dir)
	}
	return &volumeBase{plugin: p, podUID: podUID, volName: volName, path: dir, MetricsProvider: metrics}
}

// volumeBase is what mounters and unmounters share.
type volumeBase struct {
	plugin  *plugin
	podUID  types.UID
	volName string
	path    string
	volume.MetricsProvider
}

func (v *volumeBase) GetPath() string { return v.path }

func (p *attachablePlugin) NewAttacher() (volume.Attacher, error) { return &attacher{p.plugin}, nil }
func (p *attachablePlugin) NewDetacher() (volume.Detacher, error) { return &detacher{p.plugin}, nil }

func (p *attachablePlugin) NewDeviceMounter() (volume.DeviceMounter, error) {
	return &attacher{p.plugin}, nil
}

func (p *attachablePlugin) NewDeviceUnmounter() (volume.DeviceUnmounter, error) {
	return &detacher{p.plugin}, nil
}

func (p *attachablePlugin) CanAttach(*volume.Spec) (bool, error)      { return true, nil }
func (p *attachablePlugin) CanDeviceMount(*volume.Spec) (bool, error) { return true, nil }
func (p *attachablePlugin) VerifyExhaustedResource(*volume.Spec) bool { return false }

func (p *attachablePlugin) GetDeviceMountRefs(deviceMountPath string) ([]string, error) {
	return p.host.GetMounter().GetMountRefs(deviceMountPath)
}
