//go:build linux

package localplugin

import (
	"path/filepath"
	"strconv"
	"testing"

	"golang.org/x/sys/unix"
	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/pkg/volume"
	upstreamlocal "k8s.io/kubernetes/pkg/volume/local"

	"github.com/nodeplug/nodeplug/pkg/localpv/identity"
	"github.com/nodeplug/nodeplug/pkg/localpv/volumecheck"
	"github.com/nodeplug/nodeplug/pkg/util/testutil"
)

// BenchmarkSetUp is a pod's SetUp of a directory PV (a tmpfs mount root)
// with the real mounter: upstream's plugin alone, and through the check,
// which reads the directory's identity first. The pod's bind mount is
// undone outside the timer.
func BenchmarkSetUp(b *testing.B) {
	testutil.RequireMount(b)
	vol := filepath.Join(b.TempDir(), "vol0")
	lpvMount(b, vol)
	id, err := identity.Directory(vol)
	if err != nil {
		b.Fatal(err)
	}
	spec := localPV("pv-a", vol, id, v1.PersistentVolumeFilesystem)
	for name, plugins := range map[string]func() ([]volume.VolumePlugin, error){
		"upstream": func() ([]volume.VolumePlugin, error) { return upstreamlocal.ProbeVolumePlugins(), nil },
		"checked": func() ([]volume.VolumePlugin, error) {
			return Wrap(upstreamlocal.ProbeVolumePlugins(), volumecheck.New(klog.Background(), nil))
		},
	} {
		b.Run(name, func(b *testing.B) {
			ps, err := plugins()
			if err != nil {
				b.Fatal(err)
			}
			p, err := newManager(b, ps, true).FindPluginByName(PluginName)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				m, err := p.NewMounter(spec, testPod(name+strconv.Itoa(i)))
				if err != nil {
					b.Fatal(err)
				}
				if err := m.SetUp(volume.MounterArgs{}); err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				if err := unix.Unmount(m.GetPath(), 0); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
		})
	}
}

// lpvMount mounts a small tmpfs at dir until the benchmark ends.
func lpvMount(b *testing.B, dir string) {
	b.Helper()
	if err := unix.Mkdir(dir, 0o755); err != nil {
		b.Fatal(err)
	}
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "size=1m"); err != nil {
		testutil.MissingCapability(b, "cannot mount tmpfs on %s: %v", dir, err)
	}
	b.Cleanup(func() { _ = unix.Unmount(dir, unix.MNT_DETACH) })
}
