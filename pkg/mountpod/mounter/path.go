package mounter

import (
	"path/filepath"
	"strings"

	utilstrings "k8s.io/utils/strings"
)

// flexDevicePrefix is where flexvolume device mounts live under plugins/.
const flexDevicePrefix = "kubernetes.io/flexvolume"

// PluginForPath returns the volume plugin that owns target, a path under
// the kubelet root dir root, or "" when the path belongs to none:
//
//	<root>/pods/<uid>/volumes/<vendor>~<name>/...   -> <vendor>/<name>
//	<root>/plugins/kubernetes.io/flexvolume/<driver path>/mounts/... -> <driver path>
//	<root>/plugins/<vendor>/<name>/...              -> <vendor>/<name>
func PluginForPath(root, target string) string {
	rel, err := filepath.Rel(filepath.Clean(root), filepath.Clean(target))
	if err != nil || rel == "." || strings.HasPrefix(rel, "..") {
		return ""
	}
	parts := strings.Split(rel, string(filepath.Separator))
	switch {
	case len(parts) >= 4 && parts[0] == "pods" && parts[2] == "volumes":
		return utilstrings.UnescapeQualifiedName(parts[3])
	case len(parts) >= 3 && parts[0] == "plugins":
		name := parts[1] + "/" + parts[2]
		if name != flexDevicePrefix {
			return name
		}
		for i := 3; i < len(parts); i++ {
			if parts[i] == "mounts" && i > 3 {
				return strings.Join(parts[3:i], "/")
			}
		}
	}
	return ""
}
