package localadapter

import (
	"context"
	"errors"
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

// operation hands out mounter and exec, and counts the resolves.
type operation struct {
	mounter mount.Interface
	exec    utilexec.Interface
	plugins []string
}

func (o *operation) resolve(plugin string) (mount.Interface, utilexec.Interface, error) {
	o.plugins = append(o.plugins, plugin)
	return o.mounter, o.exec, nil
}

func newWrapped(t *testing.T, op Operation) volume.DeviceMountableVolumePlugin {
	t.Helper()
	plugins, err := Wrap(upstreamlocal.ProbeVolumePlugins(), op)
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

// TestFormatThroughVolumeExec: a blank block device is probed, formatted
// and mounted through the mounter and exec of one resolve (here the host's
// tools, recorded, and a fake mounter).
func TestFormatThroughVolumeExec(t *testing.T) {
	testutil.RequireRoot(t)
	testutil.RequireCommand(t, "blkid", "mkfs.ext4")
	dev := lpvtestutil.LoopDevice(t, 16<<20)
	rec := &recordingExec{Interface: utilexec.New()}
	fm := mount.NewFakeMounter(nil)
	op := &operation{mounter: fm, exec: rec}
	dm, err := newWrapped(t, op.resolve).NewDeviceMounter()
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
	if log := fm.GetLog(); len(op.plugins) != 1 || op.plugins[0] != PluginName || len(log) != 1 || log[0].Action != "mount" {
		t.Fatalf("resolved %v, mounter ran %v; want one resolve of %s and its mounter's mount", op.plugins, log, PluginName)
	}
	out, err := utilexec.New().Command("blkid", "-o", "value", "-s", "TYPE", dev).CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "ext4" {
		t.Fatalf("device type %q, %v", out, err)
	}
}

// TestDirectoryIsUpstreams: a directory-backed PV never touches the exec.
func TestDirectoryIsUpstreams(t *testing.T) {
	rec := &recordingExec{Interface: utilexec.New()}
	op := &operation{mounter: mount.NewFakeMounter(nil), exec: rec}
	dm, err := newWrapped(t, op.resolve).NewDeviceMounter()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := dm.MountDevice(localSpec(dir), dir, dir, volume.DeviceMounterArgs{}); err != nil {
		t.Fatal(err)
	}
	if len(rec.ran) != 0 || len(op.plugins) != 0 {
		t.Fatalf("exec ran %v, %d resolves for a directory", rec.ran, len(op.plugins))
	}
}

func TestWrapWithoutLocal(t *testing.T) {
	if _, err := Wrap(nil, (&operation{}).resolve); err == nil {
		t.Fatal("no error without a local plugin")
	}
}

// TestOperationErrorFailsMountDevice: when no place can run the
// format-and-mount (no pod and the host lacks the tools, or the pod cache
// has not synced), MountDevice fails with that error and runs nothing.
func TestOperationErrorFailsMountDevice(t *testing.T) {
	testutil.RequireRoot(t)
	dev := lpvtestutil.LoopDevice(t, 16<<20)
	noPlace := errors.New("no Running and Ready pod has label mount.kubernetes.io/local-volume=true")
	dm, err := newWrapped(t, func(string) (mount.Interface, utilexec.Interface, error) { return nil, nil, noPlace }).NewDeviceMounter()
	if err != nil {
		t.Fatal(err)
	}
	if err := dm.MountDevice(localSpec(dev), dev, filepath.Join(t.TempDir(), "global"), volume.DeviceMounterArgs{}); !errors.Is(err, noPlace) {
		t.Fatalf("err %v, want %v", err, noPlace)
	}
}
