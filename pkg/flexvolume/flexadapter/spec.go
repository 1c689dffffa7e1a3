package flexadapter

import (
	"errors"
	"fmt"
	"os"

	"k8s.io/kubernetes/pkg/volume"
	"k8s.io/kubernetes/pkg/volume/util"
	"k8s.io/mount-utils"

	"github.com/nodeplug/nodeplug/pkg/flexvolume/driver"
)

var errNotFlexVolume = errors.New("not a flexvolume volume")

// flexSpec is the flexvolume part of a volume.Spec, inline or persistent.
type flexSpec struct {
	driver          string
	fsType          string
	readOnly        bool
	options         map[string]string
	secretName      string
	secretNamespace string // empty: the pod's namespace
}

func getFlexSpec(spec *volume.Spec) (flexSpec, error) {
	switch {
	case spec == nil:
	case spec.Volume != nil && spec.Volume.FlexVolume != nil:
		src := spec.Volume.FlexVolume
		fs := flexSpec{driver: src.Driver, fsType: src.FSType, readOnly: src.ReadOnly, options: src.Options}
		if src.SecretRef != nil {
			fs.secretName = src.SecretRef.Name
		}
		return fs, nil
	case spec.PersistentVolume != nil && spec.PersistentVolume.Spec.FlexVolume != nil:
		src := spec.PersistentVolume.Spec.FlexVolume
		// As upstream: a PV's read-only flag comes from the spec (the claim
		// reference), not from the source.
		fs := flexSpec{driver: src.Driver, fsType: src.FSType, readOnly: spec.ReadOnly, options: src.Options}
		if src.SecretRef != nil {
			fs.secretName, fs.secretNamespace = src.SecretRef.Name, src.SecretRef.Namespace
		}
		return fs, nil
	}
	return flexSpec{}, errNotFlexVolume
}

// driverOptions returns the options argument for spec.
func driverOptions(spec *volume.Spec) (*driver.VolumeOptions, error) {
	fs, err := getFlexSpec(spec)
	if err != nil {
		return nil, err
	}
	return &driver.VolumeOptions{
		FSType: fs.fsType, ReadOnly: fs.readOnly, PVOrVolumeName: spec.Name(), Options: fs.options,
	}, nil
}

// secretsFor reads the secret a "mount" call passes to the driver. The
// secret's type must be the driver's name.
func secretsFor(host volume.VolumeHost, spec *volume.Spec, podNamespace, driverName string) (map[string][]byte, error) {
	fs, err := getFlexSpec(spec)
	if err != nil || fs.secretName == "" {
		return nil, err
	}
	ns := fs.secretNamespace
	if ns == "" {
		ns = podNamespace
	}
	if host.GetKubeClient() == nil {
		return nil, errors.New("cannot read flexvolume secret: no kube client")
	}
	data, err := util.GetSecretForPV(ns, fs.secretName, driverName, host.GetKubeClient())
	if err != nil {
		return nil, fmt.Errorf("reading flexvolume secret %s/%s: %w", ns, fs.secretName, err)
	}
	out := make(map[string][]byte, len(data))
	for k, v := range data {
		out[k] = []byte(v)
	}
	return out, nil
}

// prepareMountPoint creates dir if needed and reports whether something is
// already mounted there.
func prepareMountPoint(m mount.Interface, dir string) (bool, error) {
	notMnt, err := m.IsLikelyNotMountPoint(dir)
	if errors.Is(err, os.ErrNotExist) {
		return false, os.MkdirAll(dir, 0o750)
	}
	if err != nil {
		return false, err
	}
	return !notMnt, nil
}

// removeIfExists removes an (empty) mount point after teardown.
func removeIfExists(dir string) error {
	exists, err := mount.PathExists(dir)
	if err != nil {
		return fmt.Errorf("checking %s: %w", dir, err)
	}
	if !exists {
		return nil
	}
	return os.Remove(dir)
}

// teardownFallback reports whether a teardown command should fall back to
// the in-tree default: the driver does not support it, or its executable is
// gone (a driver removed while volumes used it).
func teardownFallback(err error) bool {
	return driver.IsNotSupported(err) || errors.Is(err, driver.ErrExecutableNotFound)
}
