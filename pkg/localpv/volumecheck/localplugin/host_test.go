package localplugin

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2/ktesting"
	"k8s.io/kubernetes/pkg/volume"
	upstreamlocal "k8s.io/kubernetes/pkg/volume/local"
	volumetest "k8s.io/kubernetes/pkg/volume/testing"
	"k8s.io/kubernetes/pkg/volume/util/hostutil"
	"k8s.io/mount-utils"

	"github.com/nodeplug/nodeplug/pkg/localpv/identity"
	"github.com/nodeplug/nodeplug/pkg/localpv/jobs"
	lpvtestutil "github.com/nodeplug/nodeplug/pkg/localpv/testutil"
	"github.com/nodeplug/nodeplug/pkg/localpv/volumecheck"
	"github.com/nodeplug/nodeplug/pkg/util/testutil"
)

// kubeletHost is what upstream's local plugin needs of its host.
type kubeletHost interface {
	volume.VolumeHost
	volume.KubeletVolumeHost
}

// realHost is volumetest's fake kubelet host with the host's real mounter
// and host utilities, so that the local plugin bind mounts and formats for
// real below the test's root dir.
type realHost struct {
	kubeletHost
	mounter mount.Interface
}

func (h *realHost) GetMounter() mount.Interface     { return h.mounter }
func (h *realHost) GetHostUtil() hostutil.HostUtils { return hostutil.NewHostUtil() }

// newManager returns a plugin manager over the given plugins, initialised
// with a host rooted in a new temporary directory: the real mounter when
// real, else volumetest's fake one.
func newManager(t testing.TB, plugins []volume.VolumePlugin, real bool) *volume.VolumePluginMgr {
	t.Helper()
	root := t.TempDir()
	tt, ok := t.(*testing.T)
	if !ok {
		// volumetest wants a *testing.T only to fail on; a benchmark's
		// host never fails to build.
		tt = new(testing.T)
	}
	var host volume.VolumeHost = volumetest.NewFakeKubeletVolumeHost(tt, root, nil, nil)
	if real {
		host = &realHost{kubeletHost: host.(kubeletHost), mounter: mount.New("")}
		t.Cleanup(func() { unmountBelow(t, root) })
	}
	mgr := &volume.VolumePluginMgr{}
	if err := mgr.InitPlugins(plugins, nil, host); err != nil {
		t.Fatal(err)
	}
	return mgr
}

// wrapped returns upstream's local plugin wrapped with a checker that
// reads with read (the real reader when nil), in a real host.
func wrapped(t *testing.T, read volumecheck.Reader) (upstreamLocal, *volume.VolumePluginMgr) {
	t.Helper()
	plugins, err := Wrap(upstreamlocal.ProbeVolumePlugins(), volumecheck.New(ktesting.NewLogger(t, ktesting.NewConfig()), read))
	if err != nil {
		t.Fatal(err)
	}
	mgr := newManager(t, plugins, true)
	p, err := mgr.FindPluginByName(PluginName)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := p.(*plugin); !ok {
		t.Fatalf("VolumePluginMgr returned %T, not the wrapper", p)
	}
	return p.(upstreamLocal), mgr
}

func localPV(name, path string, id identity.ID, mode v1.PersistentVolumeMode) *volume.Spec {
	pv := &v1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1.PersistentVolumeSpec{
			PersistentVolumeSource: v1.PersistentVolumeSource{Local: &v1.LocalVolumeSource{Path: path}},
			VolumeMode:             &mode,
		}}
	if id != "" {
		pv.Annotations = map[string]string{jobs.AnnDiskID: string(id)}
	}
	return volume.NewSpecFromPersistentVolume(pv, false)
}

func testPod(uid string) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "tenant-" + uid, Namespace: "default", UID: types.UID(uid)}}
}

// ext4Disk returns a loop device with an ext4 file system.
func ext4Disk(t *testing.T) string {
	t.Helper()
	testutil.RequireCommand(t, "mkfs.ext4")
	dev := lpvtestutil.LoopDevice(t, 16<<20)
	if out, err := exec.Command("mkfs.ext4", "-q", "-F", dev).CombinedOutput(); err != nil {
		t.Fatalf("mkfs.ext4 %s: %v: %s", dev, err, out)
	}
	return dev
}

// mountAt mounts dev's ext4 file system at dir until unmount is called or
// the test ends.
func mountAt(t *testing.T, dev, dir string) (unmount func()) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount(dev, dir, "ext4", 0, ""); err != nil {
		testutil.MissingCapability(t, "cannot mount %s on %s: %v", dev, dir, err)
	}
	done := false
	unmount = func() {
		if done {
			return
		}
		done = true
		if err := unix.Unmount(dir, unix.MNT_DETACH); err != nil {
			t.Errorf("failed to unmount %s: %v", dir, err)
		}
	}
	t.Cleanup(unmount)
	return unmount
}

// unmountBelow lazily unmounts every mount below dir, deepest first (the
// pods' bind mounts and device mounts the plugin made).
func unmountBelow(t testing.TB, dir string) {
	t.Helper()
	infos, err := mount.ParseMountInfo("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	for _, mi := range slices.Backward(infos) {
		if strings.HasPrefix(mi.MountPoint, dir+string(filepath.Separator)) {
			if err := unix.Unmount(mi.MountPoint, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) {
				t.Errorf("failed to unmount %s: %v", mi.MountPoint, err)
			}
		}
	}
}

// isMountPoint reports whether something is mounted at dir.
func isMountPoint(t *testing.T, dir string) bool {
	t.Helper()
	mnt, err := mount.New("").IsMountPoint(dir)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return err == nil && mnt
}

// refusal returns err as a refusal of reason, or fails t.
func refusal(t *testing.T, err error, reason volumecheck.Reason) *volumecheck.Refusal {
	t.Helper()
	var r *volumecheck.Refusal
	if !errors.As(err, &r) || r.Reason != reason {
		t.Fatalf("error %v, want a refusal with reason %s", err, reason)
	}
	return r
}
