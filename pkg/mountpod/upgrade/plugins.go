package upgrade

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/nodeplug/nodeplug/pkg/mountpod"
)

// The in-tree plugins whose volumes are recognised in pods and PVs; for any
// other only the node's status is checked.
var knownInTree = []string{pluginLocal, pluginNFS, pluginISCSI, pluginFC}

const (
	pluginLocal = "kubernetes.io/local-volume"
	pluginNFS   = "kubernetes.io/nfs"
	pluginISCSI = "kubernetes.io/iscsi"
	pluginFC    = "kubernetes.io/fc"
)

// servedPlugins returns the plugins a mount pod with labels serves: the
// mount labels set to "true", decoded by mountpod.ParseLabelKey, in-tree
// and flexvolume apart, each in key order. A flex key that does not decode
// is returned in bad (the kubelet ignores it too).
func servedPlugins(labels map[string]string) (intree, flex []string, bad []error) {
	keys := make([]string, 0, len(labels))
	for k, v := range labels {
		if v == mountpod.LabelValue {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, key := range keys {
		plugin, isFlex, err := mountpod.ParseLabelKey(key)
		switch {
		case errors.Is(err, mountpod.ErrNotMountLabel):
		case err == nil && isFlex && (plugin == "" || strings.ContainsRune(plugin, 0)):
			bad = append(bad, fmt.Errorf("label key %q: not a flexvolume driver name", key))
		case err != nil:
			bad = append(bad, err)
		case isFlex:
			flex = append(flex, plugin)
		case plugin != "kubernetes.io/":
			intree = append(intree, plugin)
		}
	}
	return intree, flex, bad
}

// loadPlugins sets the plugins the old pod serves and says which they are.
func (r *nodeRun) loadPlugins() {
	var bad []error
	r.intree, r.flex, bad = servedPlugins(r.old.Labels)
	for _, err := range bad {
		r.warn("%v: malformed escape, ignored", err)
	}
	all := append(slices.Clone(r.intree), r.flex...)
	if len(all) == 0 {
		r.say("pod %s serves no volume plugin (no mount label)", r.old.Name)
	} else {
		r.say("pod %s serves: %s", r.old.Name, strings.Join(all, " "))
	}
	for _, p := range r.intree {
		if !slices.Contains(knownInTree, p) {
			r.warn("pods' volumes of %s are not recognised; only the node's volumesInUse/volumesAttached are checked for it", p)
		}
	}
}
