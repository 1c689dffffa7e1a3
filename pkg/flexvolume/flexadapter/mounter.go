package flexadapter

import (
	"fmt"
	"os"

	v1 "k8s.io/api/core/v1"
	"k8s.io/kubernetes/pkg/volume"
	"k8s.io/kubernetes/pkg/volume/util"
	"k8s.io/mount-utils"

	"github.com/nodeplug/nodeplug/pkg/flexvolume/driver"
)

// mounter sets a volume up for a pod with the driver's "mount".
type mounter struct {
	*volumeBase
	spec     *volume.Spec
	pod      *v1.Pod
	readOnly bool
}

var _ volume.Mounter = &mounter{}

func (m *mounter) SetUp(args volume.MounterArgs) error {
	return m.SetUpAt(m.GetPath(), args)
}

// SetUpAt runs "mount <dir> <json>". The options carry the pod, the fsGroup
// and the secret. When the driver does not support mount, the device mount
// path is bind-mounted, as upstream does.
func (m *mounter) SetUpAt(dir string, args volume.MounterArgs) error {
	p := m.plugin
	if err := p.usable(); err != nil {
		return err
	}
	opts, err := m.options(args)
	if err != nil {
		return err
	}
	mounted, call, err := p.beginMount(dir)
	if err != nil || mounted {
		return err
	}
	err = p.drv().Mount(call.ctx, dir, opts)
	if driver.IsNotSupported(err) {
		if err = p.clearPending(dir, nil); err == nil {
			err = m.bindDeviceMount(dir)
		}
	} else {
		err = p.endMount(dir, call, err)
	}
	if err != nil {
		_ = os.Remove(dir)
		return err
	}
	if !m.readOnly && p.entry.Capabilities.FSGroup {
		oc := volume.NewVolumeOwnership(m, dir, args.FsGroup, args.FSGroupChangePolicy,
			util.FSGroupCompleteHook(p, m.spec))
		if err := oc.ChangePermissions(); err != nil {
			p.logger().Error(err, "Changing flexvolume ownership failed", "dir", dir)
		}
	}
	return nil
}

func (m *mounter) options(args volume.MounterArgs) (*driver.VolumeOptions, error) {
	opts, err := driverOptions(m.spec)
	if err != nil {
		return nil, err
	}
	opts.Pod = &driver.PodInfo{
		Name: m.pod.Name, Namespace: m.pod.Namespace, UID: string(m.pod.UID),
		ServiceAccountName: m.pod.Spec.ServiceAccountName,
	}
	opts.FSGroup = args.FsGroup
	opts.Secrets, err = secretsFor(m.plugin.host, m.spec, m.pod.Namespace, m.plugin.entry.Name)
	return opts, err
}

func (m *mounter) bindDeviceMount(dir string) error {
	src, err := m.plugin.deviceMountPath(m.spec)
	if err != nil {
		return err
	}
	m.plugin.logger().V(2).Info("Driver does not support mount, bind-mounting the device mount path", "source", src, "target", dir)
	if err := m.plugin.host.GetMounter().MountSensitiveWithoutSystemd(src, dir, "auto", []string{"bind"}, nil); err != nil {
		return fmt.Errorf("bind-mounting %s to %s: %w", src, dir, err)
	}
	return nil
}

func (m *mounter) GetAttributes() volume.Attributes {
	return volume.Attributes{
		ReadOnly:       m.readOnly,
		Managed:        !m.readOnly,
		SELinuxRelabel: m.plugin.entry.Capabilities.SELinuxRelabel,
	}
}

// unmounter tears a pod's volume down with the driver's "unmount". It works
// for drivers in every state, so that volumes can always be torn down.
type unmounter struct {
	*volumeBase
}

var _ volume.Unmounter = &unmounter{}

func (u *unmounter) TearDown() error { return u.TearDownAt(u.GetPath()) }

// TearDownAt runs "unmount <dir>". When the driver does not support it, or
// its executable is gone, the directory is unmounted in-tree.
func (u *unmounter) TearDownAt(dir string) error {
	p := u.plugin
	exists, err := mount.PathExists(dir)
	if err == nil && !exists {
		p.logger().V(2).Info("Flexvolume unmount skipped: path does not exist", "path", dir)
		return nil
	}
	err = p.drv().Unmount(p.ctx, dir)
	if teardownFallback(err) {
		p.logger().V(2).Info("Unmounting in-tree", "path", dir, "reason", err)
		err = mount.CleanupMountPoint(dir, p.host.GetMounter(), false)
	}
	if err != nil {
		return err
	}
	return removeIfExists(dir)
}
