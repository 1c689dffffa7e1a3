package mounter

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"
	"time"

	"k8s.io/klog/v2"
	"k8s.io/mount-utils"
	utilexec "k8s.io/utils/exec"

	"github.com/nodeplug/nodeplug/pkg/mountpod"
)

// Router is what the Mounter needs of pkg/mountpod/podexec's Router.
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
	registerMetrics()
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
	if onHost, err := m.hostSees(target); err != nil || onHost {
		return err
	}
	_, uerr := m.removePodOnly(plugin, target)
	return m.notPropagated(plugin, target, uerr)
}

// NotPropagatedError: a mount made in a mount pod did not reach the host.
// The kubelet would otherwise hand the empty host directory to the
// consumer, whose data would land on the node's root disk.
type NotPropagatedError struct {
	Plugin, Target, Root string
	// Undo is the error of unmounting it again in the pod, if that failed.
	Undo error
}

func (e *NotPropagatedError) Error() string {
	msg := fmt.Sprintf("the mount at %s made in the mount pod of %s did not reach the host: the mount pod must mount the kubelet root dir %s "+
		"at the same path with mountPropagation: Bidirectional (fix its DaemonSet); the mount was undone in the pod", e.Target, e.Plugin, e.Root)
	if e.Undo != nil {
		msg += ", which failed: " + e.Undo.Error()
	}
	return msg
}

func (m *Mounter) notPropagated(plugin, target string, undo error) error {
	unpropagated.WithLabelValues(plugin).Inc()
	err := &NotPropagatedError{Plugin: plugin, Target: target, Root: m.root, Undo: undo}
	m.logger.Error(err, "Mount made in a mount pod did not reach the host", "plugin", plugin, "target", target)
	return err
}

// VerifyPodMount checks, after a volume plugin's own command (a
// flexvolume driver's mount or mountdevice) ran in the mount pod of the
// plugin that owns target, that a mount it made there reached the host. A
// mount only the pod sees is unmounted in the pod and reported as a
// *NotPropagatedError; no mount on either side is fine (a driver may mount
// nothing). Targets no pod serves are not checked.
func (m *Mounter) VerifyPodMount(target string) error {
	plugin, err := m.podFor(target)
	if err != nil || plugin == "" {
		return err
	}
	if onHost, err := m.hostSees(target); err != nil || onHost {
		return err
	}
	removed, _ := m.removePodOnly(plugin, target)
	if !removed {
		return nil
	}
	return m.notPropagated(plugin, target, nil)
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

// runUnmount unmounts target in the plugin's pod. When the pod cannot
// (it does not see the mount: a bind mount the host made, or a pod without
// Bidirectional propagation), the unmount is finished on the host if the
// host sees a mount there; when neither sees one, there is nothing left to
// unmount. Teardown never waits on a mount that only the other side has.
func (m *Mounter) runUnmount(plugin, target string, flags ...string) error {
	m.logger.V(2).Info("Unmounting in mount pod", "plugin", plugin, "target", target)
	out, err := m.router.ForPlugin(plugin).Command("umount", append(flags, target)...).CombinedOutput()
	if err == nil {
		return nil
	}
	podErr := fmt.Errorf("umount of %s in the mount pod of %s failed: %w; output: %s", target, plugin, err, strings.TrimSpace(string(out)))
	onHost, herr := m.hostSees(target)
	switch {
	case herr != nil:
		return fmt.Errorf("%w; and checking the host: %w", podErr, herr)
	case !onHost:
		m.logger.Info("Unmount in mount pod failed and the host sees no mount there; nothing is left to unmount",
			"plugin", plugin, "target", target, "err", podErr)
		return nil
	}
	m.logger.Info("Mount pod cannot unmount a mount the host sees; unmounting on the host", "plugin", plugin, "target", target, "err", podErr)
	if len(flags) > 0 {
		if f, ok := m.Interface.(mount.MounterForceUnmounter); ok {
			return f.UnmountWithForce(target, forceUnmountTimeout)
		}
	}
	return m.Interface.Unmount(target)
}

// forceUnmountTimeout bounds a forced unmount finished on the host.
const forceUnmountTimeout = 30 * time.Second

// hostSees reports whether target is a mount point in the kubelet's (the
// host's) mount namespace.
func (m *Mounter) hostSees(target string) (bool, error) {
	isMnt, err := m.Interface.IsMountPoint(target)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("checking whether %s is a mount point on the host: %w", target, err)
	}
	return isMnt, nil
}

// removePodOnly unmounts target in the plugin's pod and reports whether
// there was a mount to remove there. Called when the host sees none.
func (m *Mounter) removePodOnly(plugin, target string) (bool, error) {
	out, err := m.router.ForPlugin(plugin).Command("umount", target).CombinedOutput()
	if err != nil {
		return false, fmt.Errorf("umount of %s in the mount pod of %s: %w; output: %s", target, plugin, err, strings.TrimSpace(string(out)))
	}
	return true, nil
}
