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

	"github.com/nodeplug/nodeplug/pkg/mountpod/podexec"
)

// Router is what the Mounter needs of pkg/mountpod/podexec's Router: one
// resolve of pod or host per operation.
type Router interface {
	Resolve(req podexec.Request) (*podexec.Route, error)
}

// Mounter routes mounts and unmounts of plugins that have a mount pod.
type Mounter struct {
	mount.Interface
	root   string
	router Router
	logger klog.Logger
}

var (
	_ mount.Interface             = &Mounter{}
	_ mount.MounterForceUnmounter = &Mounter{}
)

// New wraps host, the kubelet's mounter, for the kubelet root dir root.
// ctx carries the logger (mount.Interface calls take no context).
func New(ctx context.Context, host mount.Interface, root string, router Router) *Mounter {
	registerMetrics()
	return &Mounter{Interface: host, root: root, router: router, logger: klog.FromContext(ctx)}
}

// resolve decides, once for the operation at target, where utility runs:
// a nil route means the host mounter (no plugin owns target, or the
// router's rule picks the host). Every command of the operation (a mount
// and the undo of one that did not reach the host, an unmount) runs on
// that route; a pod gone meanwhile fails it rather than moving it.
func (m *Mounter) resolve(target, utility string) (*podexec.Route, error) {
	rt, err := m.route(target, utility)
	if rt == nil || err != nil {
		return nil, err
	}
	if _, inPod := rt.Pod(); !inPod {
		return nil, nil
	}
	return rt, nil
}

// route resolves the route of the plugin that owns target, pod or host;
// nil when no plugin does.
func (m *Mounter) route(target, utility string) (*podexec.Route, error) {
	plugin := PluginForPath(m.root, target)
	if plugin == "" {
		return nil, nil
	}
	rt, err := m.router.Resolve(podexec.Request{Plugin: plugin, Executable: utility})
	if err != nil {
		return nil, fmt.Errorf("%s at %s: %w", utility, target, err)
	}
	return rt, nil
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
	var rt *podexec.Route
	if !hostOnly(fstype, options) {
		var err error
		if rt, err = m.resolve(target, "mount"); err != nil {
			return err
		}
	}
	return m.mountOn(rt, source, target, fstype, options, sensitive, flags)
}

// mountOn mounts on rt, a mount pod's route, or with the host mounter when
// rt is nil or the mount needs no utility.
func (m *Mounter) mountOn(rt *podexec.Route, source, target, fstype string, options, sensitive, flags []string) error {
	if rt != nil && !hostOnly(fstype, options) {
		return m.runMount(rt, source, target, fstype, options, sensitive, flags)
	}
	if len(flags) > 0 {
		return m.Interface.MountSensitiveWithoutSystemdWithMountFlags(source, target, fstype, options, sensitive, flags)
	}
	return m.Interface.MountSensitive(source, target, fstype, options, sensitive)
}

func (m *Mounter) runMount(rt *podexec.Route, source, target, fstype string, options, sensitive, flags []string) error {
	args := slices.Clone(flags)
	if fstype != "" {
		args = append(args, "-t", fstype)
	}
	if all := append(slices.Clone(options), sensitive...); len(all) > 0 {
		args = append(args, "-o", strings.Join(all, ","))
	}
	args = append(args, source, target)
	m.logger.V(2).Info("Mounting in mount pod", "plugin", rt.Plugin(), "pod", rt.String(), "source", source, "target", target, "fstype", fstype)
	out, err := rt.Command("mount", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("mount of %s at %s (fstype %q) in %s for %s failed: %w; output: %s",
			source, target, fstype, rt, rt.Plugin(), err, strings.TrimSpace(string(out)))
	}
	if onHost, err := m.hostSees(target); err != nil || onHost {
		return err
	}
	_, uerr := m.removePodOnly(rt, target)
	return m.notPropagated(rt.Plugin(), target, uerr)
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
	rt, err := m.resolve(target, "umount")
	if err != nil || rt == nil {
		return err
	}
	return m.verifyOn(rt, target)
}

// verifyOn is VerifyPodMount on rt, a mount pod's route.
func (m *Mounter) verifyOn(rt *podexec.Route, target string) error {
	if onHost, err := m.hostSees(target); err != nil || onHost {
		return err
	}
	removed, _ := m.removePodOnly(rt, target)
	if !removed {
		return nil
	}
	return m.notPropagated(rt.Plugin(), target, nil)
}

// Unmount runs umount in the pod of the plugin that owns target, if any.
func (m *Mounter) Unmount(target string) error {
	rt, err := m.resolve(target, "umount")
	if err != nil {
		return err
	}
	if rt == nil {
		return m.Interface.Unmount(target)
	}
	return m.runUnmount(rt, target)
}

// UnmountWithForce unmounts with umount -f in the pod, or asks the host
// mounter.
func (m *Mounter) UnmountWithForce(target string, timeout time.Duration) error {
	rt, err := m.resolve(target, "umount")
	if err != nil {
		return err
	}
	if rt != nil {
		return m.runUnmount(rt, target, "-f")
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
func (m *Mounter) runUnmount(rt *podexec.Route, target string, flags ...string) error {
	plugin := rt.Plugin()
	m.logger.V(2).Info("Unmounting in mount pod", "plugin", plugin, "pod", rt.String(), "target", target)
	out, err := rt.Command("umount", append(flags, target)...).CombinedOutput()
	if err == nil {
		return nil
	}
	podErr := fmt.Errorf("umount of %s in %s for %s failed: %w; output: %s", target, rt, plugin, err, strings.TrimSpace(string(out)))
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

// removePodOnly unmounts target in the route's pod and reports whether
// there was a mount to remove there. Called when the host sees none.
func (m *Mounter) removePodOnly(rt *podexec.Route, target string) (bool, error) {
	out, err := rt.Command("umount", target).CombinedOutput()
	if err != nil {
		return false, fmt.Errorf("umount of %s in %s for %s: %w; output: %s", target, rt, rt.Plugin(), err, strings.TrimSpace(string(out)))
	}
	return true, nil
}
