package flexadapter

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/kubernetes/pkg/volume"
	"k8s.io/mount-utils"

	"github.com/nodeplug/nodeplug/pkg/flexvolume/prober"
)

func testSpec() *volume.Spec {
	return volume.NewSpecFromVolume(&v1.Volume{Name: "vol1", VolumeSource: v1.VolumeSource{
		FlexVolume: &v1.FlexVolumeSource{
			Driver: "example.com/nfs", FSType: "ext4",
			SecretRef: &v1.LocalObjectReference{Name: "creds"},
			Options:   map[string]string{"size": "1Mi"},
		},
	}})
}

func testPod() *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", UID: "uid-1"},
		Spec:       v1.PodSpec{ServiceAccountName: "sa"},
	}
}

func TestMountOptions(t *testing.T) {
	root, log := t.TempDir(), filepath.Join(t.TempDir(), "log")
	install(t, root, "example.com~nfs", "nfs", recordingDriver(log, `{"attach":false,"fsGroup":false}`, success))
	p := newTestProber(t, root, fastOptions())
	client := fake.NewSimpleClientset(&v1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "creds", Namespace: "ns"},
		Type:       "example.com/nfs",
		Data:       map[string][]byte{"password": []byte("pw")},
	})
	mgr, _ := newPluginMgr(t, p.NewConsumerView(), client)
	pl, err := mgr.FindPluginBySpec(testSpec())
	if err != nil {
		t.Fatal(err)
	}
	m, err := pl.NewMounter(testSpec(), testPod())
	if err != nil {
		t.Fatal(err)
	}
	fsGroup := int64(2000)
	if err := m.SetUp(volume.MounterArgs{FsGroup: &fsGroup}); err != nil {
		t.Fatal(err)
	}
	line := calls(t, log)[1]
	parts := strings.SplitN(line, " ", 3)
	if parts[0] != "mount" || parts[1] != m.GetPath() {
		t.Fatalf("mount call %q", line)
	}
	var opts map[string]string
	if err := json.Unmarshal([]byte(parts[2]), &opts); err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]string{
		"kubernetes.io/pod.uid":             "uid-1",
		"kubernetes.io/pod.name":            "web",
		"kubernetes.io/pod.namespace":       "ns",
		"kubernetes.io/serviceAccount.name": "sa",
		"kubernetes.io/mounterArgs.FsGroup": "2000",
		"kubernetes.io/secret/password":     "cHc=",
		"kubernetes.io/fsType":              "ext4",
		"kubernetes.io/readwrite":           "rw",
		"kubernetes.io/pvOrVolumeName":      "vol1",
		"size":                              "1Mi",
	} {
		if opts[k] != want {
			t.Errorf("option %s = %q, want %q", k, opts[k], want)
		}
	}
	u, _ := pl.NewUnmounter("vol1", "uid-1")
	if err := u.TearDown(); err != nil {
		t.Fatal(err)
	}
	if got := calls(t, log); got[len(got)-1] != "unmount "+m.GetPath() {
		t.Errorf("last call %q", got[len(got)-1])
	}
}

func TestAttachFlow(t *testing.T) {
	root, log := t.TempDir(), filepath.Join(t.TempDir(), "log")
	install(t, root, "example.com~nfs", "nfs", recordingDriver(log, `{"attach":true}`, success))
	p := newTestProber(t, root, fastOptions())
	mgr, host := newPluginMgr(t, p.NewConsumerView(), nil)
	spec := testSpec()
	pl, err := mgr.FindAttachablePluginBySpec(spec)
	if err != nil || pl == nil {
		t.Fatalf("no attachable plugin: %v", err)
	}
	at, _ := pl.NewAttacher()
	dev, err := at.Attach(spec, "node1")
	if err != nil || dev != "/dev/fake0" {
		t.Fatalf("Attach = %q, %v", dev, err)
	}
	if dev, err = at.WaitForAttach(spec, dev, testPod(), time.Minute); err != nil || dev != "/dev/fake0" {
		t.Fatalf("WaitForAttach = %q, %v", dev, err)
	}
	if m, err := at.VolumesAreAttached([]*volume.Spec{spec}, "node1"); err != nil || !m[spec] {
		t.Fatalf("VolumesAreAttached = %v, %v", m, err)
	}
	dmp, err := at.GetDeviceMountPath(spec)
	if err != nil {
		t.Fatal(err)
	}
	if err := at.MountDevice(spec, dev, dmp, volume.DeviceMounterArgs{}); err != nil {
		t.Fatal(err)
	}
	_ = host.GetMounter().Mount(dev, dmp, "ext4", nil) // what the driver did
	det, _ := pl.NewDetacher()
	if err := det.UnmountDevice(dmp); err != nil {
		t.Fatal(err)
	}
	if err := det.Detach("vol1", "node1"); err != nil {
		t.Fatal(err)
	}
	var cmds []string
	for _, c := range calls(t, log) {
		if f := strings.Fields(c); f[0] != "getvolumename" {
			cmds = append(cmds, f[0])
		}
	}
	want := "init attach waitforattach isattached mountdevice unmountdevice detach"
	if strings.Join(cmds, " ") != want {
		t.Errorf("calls %v, want %s", cmds, want)
	}
}

func TestNotSupportedFallbacks(t *testing.T) {
	root, log := t.TempDir(), filepath.Join(t.TempDir(), "log")
	install(t, root, "example.com~nfs", "nfs", "#!/bin/sh\ncase $1 in init) echo '"+success+"';; *) echo x >> "+log+"; echo '"+notSupported+"';; esac\n")
	p := newTestProber(t, root, fastOptions())
	mgr, host := newPluginMgr(t, p.NewConsumerView(), fake.NewSimpleClientset())
	spec := volume.NewSpecFromVolume(&v1.Volume{Name: "vol1", VolumeSource: v1.VolumeSource{
		FlexVolume: &v1.FlexVolumeSource{Driver: "example.com/nfs"}}})
	pl, _ := mgr.FindAttachablePluginBySpec(spec)
	at, _ := pl.NewAttacher()
	if dev, err := at.Attach(spec, "node1"); err != nil || dev != "" {
		t.Errorf("Attach fallback = %q, %v", dev, err)
	}
	if dev, err := at.WaitForAttach(spec, "/dev/x", nil, time.Second); err != nil || dev != "/dev/x" {
		t.Errorf("WaitForAttach fallback = %q, %v", dev, err)
	}
	m, _ := pl.NewMounter(spec, testPod())
	if err := m.SetUp(volume.MounterArgs{}); err != nil {
		t.Fatal(err)
	}
	fm := host.GetMounter().(*mount.FakeMounter)
	if mps, _ := fm.List(); len(mps) != 1 || mps[0].Path != m.GetPath() || mps[0].Opts[0] != "bind" {
		t.Errorf("mount fallback did not bind-mount: %+v", mps)
	}
	// The unsupported answer is remembered: a second mount does not run it.
	before := len(calls(t, log))
	_ = m.SetUpAt(filepath.Join(t.TempDir(), "other"), volume.MounterArgs{})
	if len(calls(t, log)) != before {
		t.Error("a command the driver does not support was run again")
	}
}

func TestInitFailureAllowsTeardown(t *testing.T) {
	root, log := t.TempDir(), filepath.Join(t.TempDir(), "log")
	install(t, root, "example.com~nfs", "nfs", recordingDriver(log, `{"attach":false}`, success))
	p := newTestProber(t, root, fastOptions())
	mgr, _ := newPluginMgr(t, p.NewConsumerView(), nil)
	install(t, root, "example.com~nfs", "nfs", "#!/bin/sh\ncase $1 in init) echo '{\"status\":\"Failure\",\"message\":\"backend down\"}';; *) echo \"$*\" >> "+log+"; echo '"+success+"';; esac\n")
	eventually(t, "failed update", func() bool {
		return p.Library().Snapshot().Entries["example.com/nfs"].State == prober.StateInitFailed
	})
	pl, err := mgr.FindPluginByName("example.com/nfs")
	if err != nil {
		t.Fatalf("failed driver must stay findable for teardown: %v", err)
	}
	if _, err := pl.NewMounter(testSpec(), testPod()); err == nil || !strings.Contains(err.Error(), "backend down") {
		t.Errorf("NewMounter error %v, want the init failure", err)
	}
	dir := filepath.Join(t.TempDir(), "vol")
	_ = os.Mkdir(dir, 0o755)
	u, _ := pl.NewUnmounter("vol1", "uid-1")
	if err := u.TearDownAt(dir); err != nil {
		t.Fatal(err)
	}
	if got := calls(t, log); got[len(got)-1] != "unmount "+dir {
		t.Errorf("teardown did not run the driver: %q", got)
	}
}

func TestRemovalWhileInUse(t *testing.T) {
	root, log := t.TempDir(), filepath.Join(t.TempDir(), "log")
	var used atomic.Bool
	used.Store(true)
	p := newTestProber(t, root, fastOptions())
	p.SetInUseChecker(prober.InUseFunc(func(context.Context, string) (bool, error) { return used.Load(), nil }))
	mgr, _ := newPluginMgr(t, p.NewConsumerView(), nil)
	install(t, root, "example.com~nfs", "nfs", recordingDriver(log, `{"attach":false}`, success))
	eventually(t, "install", findable(mgr, "example.com/nfs"))
	if err := os.RemoveAll(filepath.Join(root, "example.com~nfs")); err != nil {
		t.Fatal(err)
	}
	eventually(t, "removal deferred", func() bool {
		e := p.Library().Snapshot().Entries["example.com/nfs"]
		return e != nil && e.State == prober.StateRemoving
	})
	pl, err := mgr.FindPluginByName("example.com/nfs")
	if err != nil {
		t.Fatalf("in-use driver must stay findable: %v", err)
	}
	if _, err := pl.NewMounter(testSpec(), testPod()); err == nil {
		t.Error("removed driver accepted new work")
	}
	// The executable is gone: teardown falls back to an in-tree unmount.
	dir := filepath.Join(t.TempDir(), "vol")
	_ = os.Mkdir(dir, 0o755)
	u, _ := pl.NewUnmounter("vol1", "uid-1")
	if err := u.TearDownAt(dir); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("mount point not cleaned up: %v", err)
	}
	used.Store(false)
	eventually(t, "removal", func() bool { return !findable(mgr, "example.com/nfs")() })
}
