package localplugin

import (
	"errors"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2/ktesting"
	"k8s.io/kubernetes/pkg/volume"
	upstreamlocal "k8s.io/kubernetes/pkg/volume/local"
	"k8s.io/mount-utils"
	utilexec "k8s.io/utils/exec"

	"github.com/nodeplug/nodeplug/pkg/localpv/identity"
	lpvtestutil "github.com/nodeplug/nodeplug/pkg/localpv/testutil"
	"github.com/nodeplug/nodeplug/pkg/localpv/volumecheck"
	"github.com/nodeplug/nodeplug/pkg/mountpod/localadapter"
	"github.com/nodeplug/nodeplug/pkg/util/testutil"
)

// errResolved stops a format-and-mount that reached mount pods' Operation.
var errResolved = errors.New("operation resolved")

// TestComposesWithMountPods: with mount pods on (pkg/mountpod/localadapter)
// the check wraps, or is wrapped by, their local plugin; in both orders a
// swapped block device is refused before the mount pod's operation is
// resolved (nothing runs), the PV's own device reaches it, and a swapped
// directory is refused before its bind mount.
func TestComposesWithMountPods(t *testing.T) {
	testutil.RequireRoot(t)
	devA, devB := lpvtestutil.LoopDevice(t, 16<<20), lpvtestutil.LoopDevice(t, 16<<20)
	idA, idB := identity.WWN("naa.5000c500a1b2c3d4"), identity.WWN("naa.5000c500a1b2c3d5")
	dirA, dirB := t.TempDir(), t.TempDir()
	fsA, fsB := identity.FS("8f1c2b4e-0000-4000-8000-00000000000a", 1, []byte{1}), identity.FS("8f1c2b4e-0000-4000-8000-00000000000b", 1, []byte{1})
	node := map[string]identity.ID{devA: idA, devB: idB, dirA: fsB, dirB: fsA}
	read := func(path string, _ identity.ID) (identity.ID, error) { return node[path], nil }
	orders := map[string]func(check volumecheck.Checker, op localadapter.Operation) ([]volume.VolumePlugin, error){
		"check outside mount pods": func(check volumecheck.Checker, op localadapter.Operation) ([]volume.VolumePlugin, error) {
			inner, err := localadapter.Wrap(upstreamlocal.ProbeVolumePlugins(), op)
			if err != nil {
				return nil, err
			}
			return Wrap(inner, check)
		},
		"check inside mount pods": func(check volumecheck.Checker, op localadapter.Operation) ([]volume.VolumePlugin, error) {
			inner, err := Wrap(upstreamlocal.ProbeVolumePlugins(), check)
			if err != nil {
				return nil, err
			}
			return localadapter.Wrap(inner, op)
		},
	}
	for name, wrap := range orders {
		t.Run(name, func(t *testing.T) {
			resolves := 0
			op := func(string) (mount.Interface, utilexec.Interface, error) { resolves++; return nil, nil, errResolved }
			plugins, err := wrap(volumecheck.New(ktesting.NewLogger(t, ktesting.NewConfig()), read), op)
			if err != nil {
				t.Fatal(err)
			}
			mgr := newManager(t, plugins, false)
			p, err := mgr.FindDeviceMountablePluginByName(PluginName)
			if err != nil {
				t.Fatal(err)
			}
			dm, err := p.NewDeviceMounter()
			if err != nil {
				t.Fatal(err)
			}
			swapped := localPV("pv-a", devB, idA, v1.PersistentVolumeFilesystem)
			refusal(t, dm.MountDevice(swapped, devB, t.TempDir(), volume.DeviceMounterArgs{}), volumecheck.ReasonMismatch)
			if resolves != 0 {
				t.Fatalf("a refused MountDevice resolved the mount pod's operation %d times", resolves)
			}
			own := localPV("pv-a", devA, idA, v1.PersistentVolumeFilesystem)
			if err := dm.MountDevice(own, devA, t.TempDir(), volume.DeviceMounterArgs{}); !errors.Is(err, errResolved) || resolves != 1 {
				t.Fatalf("MountDevice of the PV's own device: %v after %d resolves, want the mount pod's operation", err, resolves)
			}
			vp, err := mgr.FindPluginByName(PluginName)
			if err != nil {
				t.Fatal(err)
			}
			m, err := vp.NewMounter(localPV("pv-dir", dirA, fsA, v1.PersistentVolumeFilesystem), testPod("d1"))
			if err != nil {
				t.Fatal(err)
			}
			refusal(t, m.SetUp(volume.MounterArgs{}), volumecheck.ReasonMismatch)
			if log := mgr.Host.GetMounter().(*mount.FakeMounter).GetLog(); len(log) != 0 {
				t.Fatalf("a refused SetUp mounted: %v", log)
			}
		})
	}
}
