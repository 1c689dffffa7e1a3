package localadapter

import (
	"context"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/kubernetes/pkg/volume"
	upstreamlocal "k8s.io/kubernetes/pkg/volume/local"
	volumetest "k8s.io/kubernetes/pkg/volume/testing"
	"k8s.io/mount-utils"
	utilexec "k8s.io/utils/exec"

	lpvtestutil "github.com/nodeplug/nodeplug/pkg/localpv/testutil"
	"github.com/nodeplug/nodeplug/pkg/util/testutil"
)

// recordingExec runs commands on the host and records their names.
type recordingExec struct {
	utilexec.Interface
	mu  sync.Mutex
	ran []string
}

func (r *recordingExec) Command(cmd string, args ...string) utilexec.Cmd {
	r.mu.Lock()
	r.ran = append(r.ran, cmd)
	r.mu.Unlock()
	return r.Interface.Command(cmd, args...)
}

func (r *recordingExec) CommandContext(ctx context.Context, cmd string, args ...string) utilexec.Cmd {
	return r.Command(cmd, args...)
}

func localSpec(path string) *volume.Spec {
	fs := "ext4"
	return volume.NewSpecFromPersistentVolume(&v1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: "pv1"},
		Spec: v1.PersistentVolumeSpec{PersistentVolumeSource: v1.PersistentVolumeSource{
			Local: &v1.LocalVolumeSource{Path: path, FSType: &fs}}},
	}, false)
}

func newWrapped(t *testing.T, exec utilexec.Interface, mounter mount.Interface) volume.DeviceMountableVolumePlugin {
	t.Helper()
	plugins, err := Wrap(upstreamlocal.ProbeVolumePlugins(), exec)
	if err != nil {
		t.Fatal(err)
	}
	host := volumetest.NewFakeKubeletVolumeHostWithMounterFSType(t, t.TempDir(), nil, plugins, nil)
	mgr := host.GetPluginMgr()
	p, err := mgr.FindDeviceMountablePluginByName(PluginName)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := p.(*plugin); !ok {
		t.Fatalf("VolumePluginMgr returned %T, not the wrapper", p)
	}
	return p
}

// TestFormatThroughVolumeExec: a blank block device is probed and formatted
// through the VolumeExec (here the host's tools, recorded), then mounted
// through the host's mounter.
func TestFormatThroughVolumeExec(t *testing.T) {
	testutil.RequireRoot(t)
	testutil.RequireCommand(t, "blkid", "mkfs.ext4")
	dev := lpvtestutil.LoopDevice(t, 16<<20)
	rec := &recordingExec{Interface: utilexec.New()}
	p := newWrapped(t, rec, nil)
	dm, err := p.NewDeviceMounter()
	if err != nil {
		t.Fatal(err)
	}
	target := filepath.Join(t.TempDir(), "global")
	if err := dm.MountDevice(localSpec(dev), dev, target, volume.DeviceMounterArgs{}); err != nil {
		t.Fatal(err)
	}
	got := strings.Join(rec.ran, ",")
	if !strings.Contains(got, "blkid") || !strings.Contains(got, "mkfs.ext4") {
		t.Fatalf("VolumeExec ran %q, want blkid and mkfs.ext4", got)
	}
	out, err := utilexec.New().Command("blkid", "-o", "value", "-s", "TYPE", dev).CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "ext4" {
		t.Fatalf("device type %q, %v", out, err)
	}
}

// TestDirectoryIsUpstreams: a directory-backed PV never touches the exec.
func TestDirectoryIsUpstreams(t *testing.T) {
	rec := &recordingExec{Interface: utilexec.New()}
	dm, err := newWrapped(t, rec, nil).NewDeviceMounter()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := dm.MountDevice(localSpec(dir), dir, dir, volume.DeviceMounterArgs{}); err != nil {
		t.Fatal(err)
	}
	if len(rec.ran) != 0 {
		t.Fatalf("exec ran %v for a directory", rec.ran)
	}
}

func TestWrapWithoutLocal(t *testing.T) {
	if _, err := Wrap(nil, utilexec.New()); err == nil {
		t.Fatal("no error without a local plugin")
	}
}
