package config

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"sigs.k8s.io/yaml"
)

// maxKeyBytes bounds each ConfigMap key read from disk; a ConfigMap is at
// most 1 MiB in total.
const maxKeyBytes = 1 << 20

// LoadDir reads a ConfigMap mounted as a directory (one file per key) and
// parses it. Entries starting with ".." are the kubelet's bookkeeping and are
// skipped.
func LoadDir(dir string) (*Configuration, []string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, nil, fmt.Errorf("failed to read configuration directory %s: %w", dir, err)
	}
	data := map[string]string{}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "..") {
			continue
		}
		p := filepath.Join(dir, e.Name())
		info, err := os.Stat(p)
		if err != nil {
			return nil, nil, fmt.Errorf("failed to stat configuration key %s: %w", p, err)
		}
		if info.IsDir() {
			continue
		}
		if info.Size() > maxKeyBytes {
			return nil, nil, fmt.Errorf("configuration key %s is larger than %d bytes", p, maxKeyBytes)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, nil, fmt.Errorf("failed to read configuration key %s: %w", p, err)
		}
		data[e.Name()] = string(b)
	}
	return Parse(data)
}

// Parse decodes the data of a ConfigMap, applies defaults and validates the
// result. It returns warnings for upstream keys that are accepted but
// ignored. Unknown keys and unknown fields are errors.
func Parse(data map[string]string) (*Configuration, []string, error) {
	cfg := &Configuration{UseDaemonSetTolerations: true}
	var warnings []string
	keys := make([]string, 0, len(data))
	for k := range data {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if err := decodeKey(cfg, k, data[k]); err != nil {
			if why, ok := ignoredUpstreamKeys[k]; ok {
				warnings = append(warnings, fmt.Sprintf("configuration key %q is ignored: %s", k, why))
				continue
			}
			return nil, warnings, err
		}
	}
	SetDefaults(cfg)
	if errs := Validate(cfg); len(errs) > 0 {
		return nil, warnings, fmt.Errorf("invalid configuration: %w", errs.ToAggregate())
	}
	if cfg.NodeSelector != nil {
		sel, err := nodeaffinity.NewNodeSelector(cfg.NodeSelector)
		if err != nil {
			return nil, warnings, fmt.Errorf("invalid configuration: nodeSelector: %w", err)
		}
		cfg.nodeSelector = sel
	}
	return cfg, warnings, nil
}

var errUnknownKey = fmt.Errorf("unknown configuration key")

func decodeKey(cfg *Configuration, key, value string) error {
	var err error
	switch key {
	case KeyStorageClassMap:
		err = yaml.UnmarshalStrict([]byte(value), &cfg.StorageClassMap)
	case KeyNodeSelector:
		cfg.NodeSelector = &v1.NodeSelector{}
		err = yaml.UnmarshalStrict([]byte(value), cfg.NodeSelector)
	case KeyJobTolerations:
		err = yaml.UnmarshalStrict([]byte(value), &cfg.JobTolerations)
	case KeyUseDaemonSetTolerations:
		cfg.UseDaemonSetTolerations, err = strconv.ParseBool(strings.TrimSpace(value))
	case KeyDeleteUnboundPVsOfDeletedNodes:
		cfg.DeleteUnboundPVsOfDeletedNodes, err = strconv.ParseBool(strings.TrimSpace(value))
	case KeyNodeLabelsForPV:
		err = yaml.UnmarshalStrict([]byte(value), &cfg.NodeLabelsForPV)
	case KeyLabelsForPV:
		err = yaml.UnmarshalStrict([]byte(value), &cfg.LabelsForPV)
	default:
		return fmt.Errorf("%w %q", errUnknownKey, key)
	}
	if err != nil {
		return fmt.Errorf("failed to parse configuration key %q: %w", key, err)
	}
	return nil
}

// SetDefaults fills in the defaults of every class.
func SetDefaults(cfg *Configuration) {
	for name, mc := range cfg.StorageClassMap {
		if mc.HostDir == "" && mc.DiskSelector != nil {
			mc.HostDir = DefaultLinkDir
		}
		if mc.MountDir == "" {
			mc.MountDir = mc.HostDir
		}
		if mc.VolumeMode == "" {
			mc.VolumeMode = VolumeModeFilesystem
		}
		if mc.NamePattern == "" {
			mc.NamePattern = DefaultNamePattern
		}
		if mc.AccessMode == "" {
			mc.AccessMode = string(v1.ReadWriteOnce)
		}
		cfg.StorageClassMap[name] = mc
	}
}

// ClassNames returns the class names in sorted order.
func (c *Configuration) ClassNames() []string {
	names := make([]string, 0, len(c.StorageClassMap))
	for n := range c.StorageClassMap {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Patterns splits a namePattern into its globs.
func Patterns(namePattern string) []string {
	var out []string
	for _, p := range strings.Split(namePattern, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// MatchName reports whether an entry name matches any glob of namePattern.
func MatchName(namePattern, name string) bool {
	for _, p := range Patterns(namePattern) {
		if ok, _ := filepath.Match(p, name); ok {
			return true
		}
	}
	return false
}

// AcceptsDevices reports whether the class publishes block devices: Block
// classes, and Filesystem classes with an fsType.
func (m MountConfig) AcceptsDevices() bool {
	return m.VolumeMode == VolumeModeBlock || m.FsType != ""
}
