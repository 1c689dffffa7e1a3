package flexvolume

import (
	"fmt"
	"path/filepath"
	"strings"
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/kubernetes/pkg/volume"
)

// MissingDriverPluginName is the name of the plugin that answers for a
// flexVolume whose driver is not installed on the node.
const MissingDriverPluginName = "nodeplug.io/flexvolume-missing-driver"

// withMissing wraps a DynamicPluginProber: besides the inner prober's
// plugins, the consumer gets one more, which supports exactly the
// flexVolumes whose driver the consumer has no plugin for, and fails them
// with an error that names the driver, the node and where the driver's
// executable belongs. Upstream fails such a volume with "no volume plugin
// matched", which names neither.
type withMissing struct {
	inner  volume.DynamicPluginProber
	plugin *missingDriverPlugin
	once   sync.Once
}

// WithMissingDriverPlugin returns inner with the missing-driver plugin for
// node, whose flex plugin dirs are dirs (the first is the operator's).
func WithMissingDriverPlugin(inner volume.DynamicPluginProber, node string, dirs []string) volume.DynamicPluginProber {
	return &withMissing{inner: inner, plugin: &missingDriverPlugin{node: node, dirs: dirs, have: map[string]bool{}}}
}

// Init is part of volume.DynamicPluginProber.
func (w *withMissing) Init() error { return w.inner.Init() }

// Probe is part of volume.DynamicPluginProber. It records which drivers
// the consumer gets from the inner prober, and adds the missing-driver
// plugin on the first call.
func (w *withMissing) Probe() ([]volume.ProbeEvent, error) {
	events, err := w.inner.Probe()
	w.plugin.apply(events)
	w.once.Do(func() {
		events = append(events, volume.ProbeEvent{Plugin: w.plugin, PluginName: MissingDriverPluginName, Op: volume.ProbeAddOrUpdate})
	})
	return events, err
}

// missingDriverPlugin is the volume.VolumePlugin of withMissing.
type missingDriverPlugin struct {
	node string
	dirs []string

	mu   sync.Mutex
	have map[string]bool // drivers the consumer has a plugin for
}

var _ volume.VolumePlugin = &missingDriverPlugin{}

func (p *missingDriverPlugin) apply(events []volume.ProbeEvent) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, ev := range events {
		p.have[ev.PluginName] = ev.Op != volume.ProbeRemove
	}
}

func (p *missingDriverPlugin) Init(volume.VolumeHost) error { return nil }
func (p *missingDriverPlugin) GetPluginName() string        { return MissingDriverPluginName }

// CanSupport is part of volume.VolumePlugin: a flexVolume whose driver the
// consumer has no plugin for.
func (p *missingDriverPlugin) CanSupport(spec *volume.Spec) bool {
	fs, err := getFlexSpec(spec)
	if err != nil {
		return false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return !p.have[fs.driver]
}

// GetVolumeName is part of volume.VolumePlugin; it is the first call the
// kubelet's volume manager makes for a pod's volume, and so where the pod's
// FailedMount event gets its message.
func (p *missingDriverPlugin) GetVolumeName(spec *volume.Spec) (string, error) {
	return "", p.err(spec)
}

func (p *missingDriverPlugin) NewMounter(spec *volume.Spec, _ *v1.Pod) (volume.Mounter, error) {
	return nil, p.err(spec)
}

func (p *missingDriverPlugin) NewUnmounter(volName string, _ types.UID) (volume.Unmounter, error) {
	return nil, fmt.Errorf("flexvolume volume %s: its driver is not installed on node %s", volName, p.node)
}

func (p *missingDriverPlugin) ConstructVolumeSpec(volName, _ string) (volume.ReconstructedVolume, error) {
	return volume.ReconstructedVolume{}, fmt.Errorf("flexvolume volume %s: its driver is not installed on node %s", volName, p.node)
}

func (p *missingDriverPlugin) RequiresRemount(*volume.Spec) bool { return false }
func (p *missingDriverPlugin) SupportsMountOption() bool         { return false }

func (p *missingDriverPlugin) SupportsSELinuxContextMount(*volume.Spec) (bool, error) {
	return false, nil
}

// err names the driver, the node and where the driver's executable goes.
func (p *missingDriverPlugin) err(spec *volume.Spec) error {
	fs, err := getFlexSpec(spec)
	if err != nil {
		return err
	}
	vendor, name, ok := strings.Cut(fs.driver, "/")
	dir := fs.driver
	if ok {
		dir = vendor + "~" + name
	} else {
		name = fs.driver
	}
	exe := filepath.Join(p.dirs[0], dir, name)
	return fmt.Errorf("flexvolume driver %q is not installed on node %s: no executable %s (install it there, e.g. with the driver's installer DaemonSet; the pod's volume is set up as soon as it appears)",
		fs.driver, p.node, exe)
}
