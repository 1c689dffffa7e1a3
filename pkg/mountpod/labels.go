package mountpod

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// Label and annotation keys of mount pods.
const (
	// InTreeLabelPrefix is the label key prefix for in-tree plugins:
	// plugin "kubernetes.io/X" is served by pods labelled
	// "mount.kubernetes.io/X=true".
	InTreeLabelPrefix = "mount.kubernetes.io"
	// FlexLabelPrefix is the label key prefix for flexvolume drivers.
	FlexLabelPrefix = "flexvolume.mount.kubernetes.io"
	// LabelValue is the value a mount label must have.
	LabelValue = "true"
	// ContainerAnnotation names the container that runs the utilities in a
	// pod with several containers. Without it, the first container does.
	ContainerAnnotation = "mount.kubernetes.io/container"
	// FlexDriverDir is where a mount pod keeps flexvolume drivers, laid out
	// as on the host: FlexDriverDir/<vendor>~<driver>/<driver>.
	FlexDriverDir = "/usr/libexec/kubernetes/kubelet-plugins/volume/exec"

	inTreePluginPrefix = "kubernetes.io/"
	// upstreamFlexPrefix is a prefix that some flexvolume plugin names carry
	// (upstream's unique volume names of flex volumes, older plugin names);
	// v1.37.2's flexvolume plugin is named by the bare driver name.
	upstreamFlexPrefix = "flexvolume-"
	maxLabelName       = validation.LabelValueMaxLength // 63, the name part of a key
)

// ErrNotMountLabel is returned by ParseLabelKey for keys that are not mount
// labels.
var ErrNotMountLabel = errors.New("not a mount label key")

// LabelKey returns the label key that marks pods serving plugin. In-tree
// plugins are "kubernetes.io/<name>"; any other name is a flexvolume driver
// ("<vendor>/<driver>" or "<driver>", optionally with a "flexvolume-"
// prefix, which is dropped).
func LabelKey(plugin string) (string, error) {
	if name, ok := strings.CutPrefix(plugin, inTreePluginPrefix); ok {
		return checkKey(InTreeLabelPrefix+"/"+name, plugin)
	}
	return FlexLabelKey(strings.TrimPrefix(plugin, upstreamFlexPrefix))
}

// FlexLabelKey returns the label key for flexvolume driver drv. Every byte
// outside [A-Za-z0-9.-], and a '.' or '-' at the end, is written as '_'
// followed by two lower-case hex digits, so "nodeplug.io/fuse" becomes
// "flexvolume.mount.kubernetes.io/nodeplug.io_2ffuse". A driver whose name
// does not start with a letter or digit, or whose escaped name exceeds 63
// characters, cannot be served from a mount pod (valid flexvolume driver
// names always start with one).
func FlexLabelKey(drv string) (string, error) {
	if drv == "" {
		return "", errors.New("empty flexvolume driver name")
	}
	if !plain(drv[0], true) {
		return "", fmt.Errorf("flexvolume driver %q cannot be served from a mount pod: its name must start with a letter or digit", drv)
	}
	return checkKey(FlexLabelPrefix+"/"+escape(drv), drv)
}

func checkKey(key, plugin string) (string, error) {
	_, name, _ := strings.Cut(key, "/")
	if len(name) > maxLabelName {
		return "", fmt.Errorf("plugin %q cannot be served from a mount pod: its label name %q is %d characters, more than %d",
			plugin, name, len(name), maxLabelName)
	}
	if errs := validation.IsQualifiedName(key); len(errs) > 0 {
		return "", fmt.Errorf("plugin %q has no valid mount label: %s", plugin, strings.Join(errs, "; "))
	}
	return key, nil
}

// ParseLabelKey returns the plugin name a mount label key stands for:
// "kubernetes.io/<name>" for in-tree keys and the driver name for flex
// keys. Other keys return ErrNotMountLabel.
func ParseLabelKey(key string) (plugin string, flex bool, err error) {
	prefix, name, ok := strings.Cut(key, "/")
	if !ok {
		return "", false, ErrNotMountLabel
	}
	switch prefix {
	case InTreeLabelPrefix:
		if name == "container" {
			return "", false, ErrNotMountLabel
		}
		return inTreePluginPrefix + name, false, nil
	case FlexLabelPrefix:
		drv, err := unescape(name)
		if err != nil {
			return "", true, fmt.Errorf("label key %q: %w", key, err)
		}
		return drv, true, nil
	}
	return "", false, ErrNotMountLabel
}

func plain(c byte, edge bool) bool {
	switch {
	case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		return true
	case c == '.' || c == '-':
		return !edge
	}
	return false
}

func escape(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if plain(c, i == 0 || i == len(s)-1) {
			b.WriteByte(c)
			continue
		}
		fmt.Fprintf(&b, "_%02x", c)
	}
	return b.String()
}

func unescape(s string) (string, error) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '_' {
			b.WriteByte(s[i])
			continue
		}
		if i+2 >= len(s) {
			return "", fmt.Errorf("truncated escape at offset %d", i)
		}
		v, err := strconv.ParseUint(s[i+1:i+3], 16, 8)
		if err != nil || s[i+1:i+3] != fmt.Sprintf("%02x", v) {
			return "", fmt.Errorf("bad escape %q at offset %d", s[i:i+3], i)
		}
		b.WriteByte(byte(v))
		i += 2
	}
	return b.String(), nil
}
