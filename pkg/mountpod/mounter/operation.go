package mounter

import (
	"context"
	"fmt"

	"k8s.io/mount-utils"
	utilexec "k8s.io/utils/exec"

	"github.com/nodeplug/nodeplug/pkg/mountpod/podexec"
)

// Operation resolves once where an operation of plugin that runs several
// utilities runs, and returns the mounter and the exec that run all of
// them there: a block-backed local PV's format-and-mount
// (pkg/mountpod/localadapter), whose blkid, mkfs, fsck and mount are one
// operation. In a pod, mounts through the returned mounter are checked to
// reach the host as Mount's are; on the host it is the host mounter.
func (m *Mounter) Operation(plugin string) (mount.Interface, utilexec.Interface, error) {
	rt, err := m.router.Resolve(podexec.Request{Plugin: plugin, Executable: "mount"})
	if err != nil {
		return nil, nil, fmt.Errorf("operation of plugin %s: %w", plugin, err)
	}
	if _, inPod := rt.Pod(); !inPod {
		return m.Interface, rt, nil
	}
	return &pinned{Interface: m.Interface, m: m, rt: rt}, rt, nil
}

// PodOperation resolves once where a volume plugin's own command at target
// (a flexvolume driver's mount or mountdevice) and the check of what it
// mounted run. The returned ctx carries the route (podexec.WithRoute): the
// driver call made with it runs there. check is VerifyPodMount on that
// route, to call after the command succeeded; with no pod it does nothing.
func (m *Mounter) PodOperation(ctx context.Context, target string) (context.Context, func() error, error) {
	rt, err := m.route(target, "umount")
	if err != nil {
		return ctx, nil, err
	}
	if rt == nil {
		return ctx, func() error { return nil }, nil
	}
	check := func() error { return nil }
	if _, inPod := rt.Pod(); inPod {
		check = func() error { return m.verifyOn(rt, target) }
	}
	return podexec.WithRoute(ctx, rt), check, nil
}

// pinned is a Mounter whose mounts and unmounts all run on one route.
type pinned struct {
	mount.Interface
	m  *Mounter
	rt *podexec.Route
}

func (p *pinned) Mount(source, target, fstype string, options []string) error {
	return p.m.mountOn(p.rt, source, target, fstype, options, nil, nil)
}

func (p *pinned) MountSensitive(source, target, fstype string, options, sensitive []string) error {
	return p.m.mountOn(p.rt, source, target, fstype, options, sensitive, nil)
}

func (p *pinned) MountSensitiveWithoutSystemd(source, target, fstype string, options, sensitive []string) error {
	return p.m.mountOn(p.rt, source, target, fstype, options, sensitive, nil)
}

func (p *pinned) MountSensitiveWithoutSystemdWithMountFlags(source, target, fstype string, options, sensitive, flags []string) error {
	return p.m.mountOn(p.rt, source, target, fstype, options, sensitive, flags)
}

func (p *pinned) Unmount(target string) error { return p.m.runUnmount(p.rt, target) }
