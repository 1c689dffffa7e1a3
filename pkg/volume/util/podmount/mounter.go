package podmount

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"k8s.io/klog/v2"
	"k8s.io/mount-utils"
	utilexec "k8s.io/utils/exec"

	"github.com/nodeplug/nodeplug/pkg/mountpod"
)

// Router is what the Mounter needs of pkg/volume/util/exec's Router.
type Router interface {
	ForPlugin(plugin string) utilexec.Interface
}

// Mounter routes mounts and unmounts of plugins that have a mount pod.
type Mounter struct {
	mount.Interface
	root   string
	finder mountpod.Finder
	router Router
	logger klog.Logger
}

var (
	_ mount.Interface             = &Mounter{}
	_ mount.MounterForceUnmounter = &Mounter{}
)

// New wraps host, the kubelet's mounter, for the kubelet root dir root.
// ctx carries the logger (mount.Interface calls take no context).
func New(ctx context.Context, host mount.Interface, root string, finder mountpod.Finder, router Router) *Mounter {
	return &Mounter{Interface: host, root: root, finder: finder, router: router, logger: klog.FromContext(ctx)}
}

// podFor returns the plugin whose pod should run a mount at target, or ""
// for the host. An error means a pod may serve it but cannot be asked yet.
func (m *Mounter) podFor(target string) (string, error) {
	plugin := PluginForPath(m.root, target)
	if plugin == "" {
		return "", nil
	}
	_, err := m.finder.Find(plugin)
	var noPod *mountpod.NoPodError
	switch {
	case err == nil:
		return plugin, nil
	case errors.As(err, &noPod):
		return "", nil
	}
	return "", fmt.Errorf("mounting at %s for plugin %s: %w", target, plugin, err)
}

// hostOnly reports mounts that need no utility.
func hostOnly(fstype string, options []string) bool {
	switch fstype {
	case "tmpfs", "ramfs", "hugetlbfs":
		return true
	}
	return slices.ContainsFunc(options, func(o string) bool { return o == "bind" || o == "rbind" || o == "remount" })
}

func (m *Mounter) Mount(source, target, fstype string, options []string) error {
	return m.MountSensitiveWithoutSystemdWithMountFlags(source, target, fstype, options, nil, nil)
}

func (m *Mounter) MountSensitive(source, target, fstype string, options, sensitive []string) error {
	return m.MountSensitiveWithoutSystemdWithMountFlags(source, target, fstype, options, sensitive, nil)
}

func (m *Mounter) MountSensitiveWithoutSystemd(source, target, fstype string, options, sensitive []string) error {
	return m.MountSensitiveWithoutSystemdWithMountFlags(source, target, fstype, options, sensitive, nil)
}

// MountSensitiveWithoutSystemdWithMountFlags runs mount in the plugin's
// pod, or hands the call to the host mounter unchanged.
func (m *Mounter) MountSensitiveWithoutSystemdWithMountFlags(source, target, fstype string, options, sensitive, flags []string) error {
	if !hostOnly(fstype, options) {
		plugin, err := m.podFor(target)
		if err != nil {
			return err
		}
		if plugin != "" {
			return m.runMount(plugin, source, target, fstype, options, sensitive, flags)
		}
	}
	if len(flags) > 0 {
		return m.Interface.MountSensitiveWithoutSystemdWithMountFlags(source, target, fstype, options, sensitive, flags)
	}
	return m.Interface.MountSensitive(source, target, fstype, options, sensitive)
}

func (m *Mounter) runMount(plugin, source, target, fstype string, options, sensitive, flags []string) error {
	args := slices.Clone(flags)
	if fstype != "" {
		args = append(args, "-t", fstype)
	}
	if all := append(slices.Clone(options), sensitive...); len(all) > 0 {
		args = append(args, "-o", strings.Join(all, ","))
	}
	args = append(args, source, target)
	m.logger.V(2).Info("Mounting in mount pod", "plugin", plugin, "source", source, "target", target, "fstype", fstype)
	out, err := m.router.ForPlugin(plugin).Command("mount", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("mount of %s at %s (fstype %q) in the mount pod of %s failed: %w; output: %s",
			source, target, fstype, plugin, err, strings.TrimSpace(string(out)))
	}
	return nil
}

// Unmount runs umount in the pod of the plugin that owns target, if any.
func (m *Mounter) Unmount(target string) error {
	plugin, err := m.podFor(target)
	if err != nil {
		return err
	}
	if plugin == "" {
		return m.Interface.Unmount(target)
	}
	return m.runUnmount(plugin, target)
}

// UnmountWithForce unmounts with umount -f in the pod, or asks the host
// mounter.
func (m *Mounter) UnmountWithForce(target string, timeout time.Duration) error {
	plugin, err := m.podFor(target)
	if err != nil {
		return err
	}
	if plugin != "" {
		return m.runUnmount(plugin, target, "-f")
	}
	if f, ok := m.Interface.(mount.MounterForceUnmounter); ok {
		return f.UnmountWithForce(target, timeout)
	}
	return m.Interface.Unmount(target)
}

func (m *Mounter) runUnmount(plugin, target string, flags ...string) error {
	m.logger.V(2).Info("Unmounting in mount pod", "plugin", plugin, "target", target)
	out, err := m.router.ForPlugin(plugin).Command("umount", append(flags, target)...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("umount of %s in the mount pod of %s failed: %w; output: %s", target, plugin, err, strings.TrimSpace(string(out)))
	}
	return nil
}
