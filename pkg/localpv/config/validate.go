package config

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strings"

	v1 "k8s.io/api/core/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
)

var (
	fsTypeRE        = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,31}$`)
	reservedDirs    = []string{"/dev", "/proc", "/sys", "/etc", "/var/run/secrets"}
	supportedModes  = []string{VolumeModeFilesystem, VolumeModeBlock}
	supportedAccess = sets.New(string(v1.ReadWriteOnce), string(v1.ReadOnlyMany),
		string(v1.ReadWriteMany), string(v1.ReadWriteOncePod))
	supportedEffects = sets.New(string(v1.TaintEffectNoSchedule),
		string(v1.TaintEffectPreferNoSchedule), string(v1.TaintEffectNoExecute))
)

// Validate checks a defaulted configuration and returns every problem found,
// each with the path of the offending field.
func Validate(cfg *Configuration) field.ErrorList {
	var errs field.ErrorList
	root := field.NewPath(KeyStorageClassMap)
	if len(cfg.StorageClassMap) == 0 {
		errs = append(errs, field.Required(root, "at least one storage class must be configured"))
	}
	for _, name := range cfg.ClassNames() {
		p := root.Key(name)
		for _, msg := range validation.IsDNS1123Subdomain(name) {
			errs = append(errs, field.Invalid(p, name, "storage class name: "+msg))
		}
		errs = append(errs, validateMountConfig(cfg.StorageClassMap[name], p)...)
	}
	errs = append(errs, validateOverlaps(cfg, root)...)
	if cfg.NodeSelector != nil {
		if _, err := nodeaffinity.NewNodeSelector(cfg.NodeSelector, field.WithPath(field.NewPath(KeyNodeSelector))); err != nil {
			errs = append(errs, field.Invalid(field.NewPath(KeyNodeSelector), "", err.Error()))
		}
	}
	errs = append(errs, validateTolerations(cfg.JobTolerations, field.NewPath(KeyJobTolerations))...)
	for i, k := range cfg.NodeLabelsForPV {
		for _, msg := range validation.IsQualifiedName(k) {
			errs = append(errs, field.Invalid(field.NewPath(KeyNodeLabelsForPV).Index(i), k, msg))
		}
	}
	errs = append(errs, metav1validation.ValidateLabels(cfg.LabelsForPV, field.NewPath(KeyLabelsForPV))...)
	return errs
}

func validateMountConfig(m MountConfig, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if m.DiskSelector != nil {
		errs = append(errs, validateLinkDirs(m, p)...)
		errs = append(errs, validateDiskSelector(m, p)...)
	} else {
		errs = append(errs, validateDir(m.HostDir, p.Child("hostDir"))...)
		errs = append(errs, validateDir(m.MountDir, p.Child("mountDir"))...)
	}
	switch m.VolumeMode {
	case VolumeModeFilesystem:
		if m.FsType != "" && !fsTypeRE.MatchString(m.FsType) {
			errs = append(errs, field.Invalid(p.Child("fsType"), m.FsType, "must be a filesystem name such as ext4 or xfs"))
		}
	case VolumeModeBlock:
		if m.FsType != "" {
			errs = append(errs, field.Forbidden(p.Child("fsType"), "only valid with volumeMode Filesystem"))
		}
	default:
		errs = append(errs, field.NotSupported(p.Child("volumeMode"), m.VolumeMode, supportedModes))
	}
	if m.AcceptsDevices() && len(m.BlockCleanerCommand) == 0 {
		errs = append(errs, field.Required(p.Child("blockCleanerCommand"),
			fmt.Sprintf("required when the class holds block devices, for example [\"blkdiscard\", \"$(%s)\"]", BlockDeviceVariable)))
	}
	for i, a := range m.BlockCleanerCommand {
		if a == "" || strings.ContainsRune(a, 0) {
			errs = append(errs, field.Invalid(p.Child("blockCleanerCommand").Index(i), a, "must be a non-empty string without NUL"))
		}
	}
	if len(m.BlockCleanerCommand) > 0 && !strings.HasPrefix(m.BlockCleanerCommand[0], "/") && strings.Contains(m.BlockCleanerCommand[0], "/") {
		errs = append(errs, field.Invalid(p.Child("blockCleanerCommand").Index(0), m.BlockCleanerCommand[0], "must be an absolute path or a bare command name"))
	}
	errs = append(errs, validateNamePattern(m.NamePattern, p.Child("namePattern"))...)
	if len(m.Selector) > 0 {
		if _, err := nodeaffinity.NewNodeSelector(&v1.NodeSelector{NodeSelectorTerms: m.Selector}, field.WithPath(p.Child("selector"))); err != nil {
			errs = append(errs, field.Invalid(p.Child("selector"), "", err.Error()))
		}
	}
	if !supportedAccess.Has(m.AccessMode) {
		errs = append(errs, field.NotSupported(p.Child("accessMode"), m.AccessMode, sets.List(supportedAccess)))
	}
	errs = append(errs, validateReleaseClaims(m, p)...)
	return errs
}

func validateDir(dir string, p *field.Path) field.ErrorList {
	switch {
	case dir == "":
		return field.ErrorList{field.Required(p, "")}
	case !filepath.IsAbs(dir):
		return field.ErrorList{field.Invalid(p, dir, "must be an absolute path")}
	case filepath.Clean(dir) != dir:
		return field.ErrorList{field.Invalid(p, dir, fmt.Sprintf("must be a clean path (%s)", filepath.Clean(dir)))}
	case dir == "/":
		return field.ErrorList{field.Invalid(p, dir, "must not be the root directory")}
	case strings.ContainsAny(dir, "\x00\n"):
		return field.ErrorList{field.Invalid(p, dir, "must not contain NUL or newline")}
	}
	for _, r := range reservedDirs {
		if within(dir, r) || within(r, dir) {
			return field.ErrorList{field.Invalid(p, dir, fmt.Sprintf("must not overlap the system directory %s", r))}
		}
	}
	return nil
}

func validateNamePattern(pattern string, p *field.Path) field.ErrorList {
	globs := Patterns(pattern)
	if len(globs) == 0 {
		return field.ErrorList{field.Invalid(p, pattern, "must hold at least one glob")}
	}
	var errs field.ErrorList
	for _, g := range globs {
		if strings.Contains(g, "/") {
			errs = append(errs, field.Invalid(p, g, "globs match one directory entry and must not contain '/'"))
		} else if _, err := filepath.Match(g, ""); err != nil {
			errs = append(errs, field.Invalid(p, g, err.Error()))
		}
	}
	return errs
}

// validateOverlaps rejects classes whose host or mount directories are equal
// or nested: the same disk would otherwise be published twice.
func validateOverlaps(cfg *Configuration, root *field.Path) field.ErrorList {
	var errs field.ErrorList
	names := cfg.ClassNames()
	for i, a := range names {
		for _, b := range names[i+1:] {
			ma, mb := cfg.StorageClassMap[a], cfg.StorageClassMap[b]
			if sharedLinkDir(ma, mb) {
				continue
			}
			if ma.HostDir != "" && mb.HostDir != "" && (within(ma.HostDir, mb.HostDir) || within(mb.HostDir, ma.HostDir)) {
				errs = append(errs, field.Invalid(root.Key(b).Child("hostDir"), mb.HostDir,
					fmt.Sprintf("overlaps hostDir %s of class %s", ma.HostDir, a)))
			}
			if ma.MountDir != "" && mb.MountDir != "" && (within(ma.MountDir, mb.MountDir) || within(mb.MountDir, ma.MountDir)) {
				errs = append(errs, field.Invalid(root.Key(b).Child("mountDir"), mb.MountDir,
					fmt.Sprintf("overlaps mountDir %s of class %s", ma.MountDir, a)))
			}
		}
	}
	return errs
}

// sharedLinkDir reports whether two classes select disks from the same
// directory of links; discovery gives a disk that both select to the first
// class in name order.
func sharedLinkDir(a, b MountConfig) bool {
	return a.DiskSelector != nil && b.DiskSelector != nil && a.HostDir == b.HostDir && a.MountDir == b.MountDir
}

func validateTolerations(ts []v1.Toleration, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, t := range ts {
		tp := p.Index(i)
		if t.Key != "" {
			for _, msg := range validation.IsQualifiedName(t.Key) {
				errs = append(errs, field.Invalid(tp.Child("key"), t.Key, msg))
			}
		}
		switch t.Operator {
		case v1.TolerationOpExists:
			if t.Value != "" {
				errs = append(errs, field.Invalid(tp.Child("value"), t.Value, "must be empty when operator is Exists"))
			}
		case v1.TolerationOpEqual, "":
			if t.Key == "" {
				errs = append(errs, field.Invalid(tp.Child("operator"), t.Operator, "must be Exists when key is empty"))
			}
		default:
			errs = append(errs, field.NotSupported(tp.Child("operator"), t.Operator, []string{"Equal", "Exists"}))
		}
		if t.Effect != "" && !supportedEffects.Has(string(t.Effect)) {
			errs = append(errs, field.NotSupported(tp.Child("effect"), t.Effect, sets.List(supportedEffects)))
		}
		if t.TolerationSeconds != nil && t.Effect != v1.TaintEffectNoExecute {
			errs = append(errs, field.Invalid(tp.Child("effect"), t.Effect, "must be NoExecute when tolerationSeconds is set"))
		}
	}
	return errs
}

// within reports whether path is dir or below it. Both must be clean.
func within(path, dir string) bool {
	return path == dir || strings.HasPrefix(path, strings.TrimSuffix(dir, "/")+"/")
}

// Within reports whether the clean path p is dir or lies below it.
func Within(p, dir string) bool { return within(p, dir) }
