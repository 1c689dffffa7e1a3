package flexadapter

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/kubernetes/pkg/volume"
	volumetesting "k8s.io/kubernetes/pkg/volume/testing"
	"k8s.io/mount-utils"
	utilexec "k8s.io/utils/exec"
	testingexec "k8s.io/utils/exec/testing"
)

// operatorMounter is the kubelet's mounter with mount pods on, as far as
// the flex plugin sees it: one PodOperation per driver call, whose check
// runs after the call succeeded.
type operatorMounter struct {
	*mount.FakeMounter
	resolveErr, checkErr error
	ops, checks          []string
}

func (m *operatorMounter) PodOperation(ctx context.Context, target string) (context.Context, func() error, error) {
	m.ops = append(m.ops, filepath.Base(target))
	if m.resolveErr != nil {
		return ctx, nil, m.resolveErr
	}
	return ctx, func() error { m.checks = append(m.checks, filepath.Base(target)); return m.checkErr }, nil
}

func (m *operatorMounter) VerifyPodMount(string) error { return nil }

// mounterHost is a kubelet volume host whose mounter is the test's.
type mounterHost struct {
	volume.VolumeHost
	mounter mount.Interface
}

func (h mounterHost) GetMounter() mount.Interface { return h.mounter }

// TestPodOperation: each mountdevice and mount is one pod operation: the
// driver runs once and its check once after it succeeded; a failed check
// fails the call and undoes what it mounted; a failed resolve runs nothing.
func TestPodOperation(t *testing.T) {
	failed := errors.New("the mount did not reach the host")
	cases := map[string]struct {
		resolveErr, checkErr error
		setUp                bool
		wantDriver           bool
		wantChecks           int
		wantErr              error
	}{
		"mountdevice: one operation, checked":  {wantDriver: true, wantChecks: 1},
		"mount: one operation, checked":        {setUp: true, wantDriver: true, wantChecks: 1},
		"check fails: the call fails":          {checkErr: failed, wantDriver: true, wantChecks: 1, wantErr: failed},
		"resolve fails: no driver call, error": {resolveErr: failed, wantErr: failed},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			root, tmp := t.TempDir(), t.TempDir()
			log := filepath.Join(tmp, "log")
			install(t, root, "example.com~nfs", "nfs", recordingDriver(log, `{"attach":true,"fsGroup":false}`, success))
			p := newTestProber(t, root, fastOptions())
			om := &operatorMounter{FakeMounter: mount.NewFakeMounter(nil), resolveErr: tc.resolveErr, checkErr: tc.checkErr}
			host := mounterHost{VolumeHost: volumetesting.NewFakeKubeletVolumeHost(t, t.TempDir(), fake.NewSimpleClientset(), nil), mounter: om}
			mgr := &volume.VolumePluginMgr{}
			if err := mgr.InitPlugins(nil, p.NewConsumerView(), host); err != nil {
				t.Fatal(err)
			}
			spec := volume.NewSpecFromVolume(&v1.Volume{Name: "vol1", VolumeSource: v1.VolumeSource{
				FlexVolume: &v1.FlexVolumeSource{Driver: "example.com/nfs"}}})
			eventually(t, "the driver", findable(mgr, "example.com/nfs"))
			pl, err := mgr.FindAttachablePluginBySpec(spec)
			if err != nil || pl == nil {
				t.Fatalf("no attachable plugin: %v", err)
			}
			if tc.setUp {
				m, merr := pl.NewMounter(spec, testPod())
				if merr != nil {
					t.Fatal(merr)
				}
				err = m.SetUp(volume.MounterArgs{})
			} else {
				at, _ := pl.NewAttacher()
				target, _ := at.GetDeviceMountPath(spec)
				err = at.MountDevice(spec, "/dev/fake0", target, volume.DeviceMounterArgs{})
			}
			if !errors.Is(err, tc.wantErr) || (tc.wantErr == nil && err != nil) {
				t.Fatalf("err %v, want %v", err, tc.wantErr)
			}
			ran := slices.ContainsFunc(calls(t, log), func(c string) bool {
				return strings.HasPrefix(c, "mount ") || strings.HasPrefix(c, "mountdevice ")
			})
			if ran != tc.wantDriver || len(om.ops) != 1 || len(om.checks) != tc.wantChecks || !slices.Equal(om.checks, om.ops[:tc.wantChecks]) {
				t.Fatalf("driver ran %v, operations %v, checks %v; want driver %v, one operation, %d checks of it",
					ran, om.ops, om.checks, tc.wantDriver, tc.wantChecks)
			}
		})
	}
}

// formatOperator is operatorMounter that also offers Operation: the one
// decision for a format-and-mount.
type formatOperator struct {
	*operatorMounter
	opErr   error
	plugins []string
	mounter *mount.FakeMounter
	exec    *testingexec.FakeExec
}

func (m *formatOperator) Operation(plugin string) (mount.Interface, utilexec.Interface, error) {
	m.plugins = append(m.plugins, plugin)
	if m.opErr != nil {
		return nil, nil, m.opErr
	}
	return m.mounter, m.exec, nil
}

// TestFormatFallbackDecidesOnce: a driver that answers "Not supported" to
// mountdevice gets the in-tree format and mount, whose blkid, fsck and
// mount all run on the one route Operation resolved for the driver; a
// failed resolve runs none of them.
func TestFormatFallbackDecidesOnce(t *testing.T) {
	noPod := errors.New("no pod serves the driver and the host lacks mount")
	cases := map[string]struct {
		opErr     error
		wantMount bool
	}{
		"resolved once: blkid, fsck and mount on that route": {wantMount: true},
		"resolve fails: nothing runs, the error names it":    {opErr: noPod},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			root, log := t.TempDir(), filepath.Join(t.TempDir(), "log")
			install(t, root, "example.com~nfs", "nfs", recordingDriver(log, `{"attach":true,"fsGroup":false}`, notSupported))
			p := newTestProber(t, root, fastOptions())
			ok := func() ([]byte, []byte, error) { return nil, nil, nil }
			blkid := func() ([]byte, []byte, error) { return []byte("DEVNAME=/dev/fake0\nTYPE=ext4\n"), nil, nil }
			var ran []string
			fe := &testingexec.FakeExec{}
			for _, out := range []testingexec.FakeAction{blkid, ok} {
				fe.CommandScript = append(fe.CommandScript, func(cmd string, args ...string) utilexec.Cmd {
					ran = append(ran, cmd)
					return testingexec.InitFakeCmd(&testingexec.FakeCmd{CombinedOutputScript: []testingexec.FakeAction{out}}, cmd, args...)
				})
			}
			om := &formatOperator{operatorMounter: &operatorMounter{FakeMounter: mount.NewFakeMounter(nil)},
				opErr: tc.opErr, mounter: mount.NewFakeMounter(nil), exec: fe}
			host := mounterHost{VolumeHost: volumetesting.NewFakeKubeletVolumeHost(t, t.TempDir(), fake.NewSimpleClientset(), nil), mounter: om}
			mgr := &volume.VolumePluginMgr{}
			if err := mgr.InitPlugins(nil, p.NewConsumerView(), host); err != nil {
				t.Fatal(err)
			}
			spec := volume.NewSpecFromVolume(&v1.Volume{Name: "vol1", VolumeSource: v1.VolumeSource{
				FlexVolume: &v1.FlexVolumeSource{Driver: "example.com/nfs", FSType: "ext4"}}})
			eventually(t, "the driver", findable(mgr, "example.com/nfs"))
			pl, err := mgr.FindAttachablePluginBySpec(spec)
			if err != nil || pl == nil {
				t.Fatalf("no attachable plugin: %v", err)
			}
			at, _ := pl.NewAttacher()
			target, _ := at.GetDeviceMountPath(spec)
			err = at.MountDevice(spec, "/dev/fake0", target, volume.DeviceMounterArgs{})
			if !errors.Is(err, tc.opErr) || (tc.opErr == nil && err != nil) {
				t.Fatalf("err %v, want %v", err, tc.opErr)
			}
			if len(om.plugins) != 1 || om.plugins[0] != "example.com/nfs" {
				t.Fatalf("Operation calls %v, want one for example.com/nfs", om.plugins)
			}
			mps, _ := om.mounter.List()
			if tc.wantMount != (len(mps) == 1 && mps[0].Path == target) {
				t.Fatalf("mounts on the operation's mounter %+v, want mounted %v", mps, tc.wantMount)
			}
			if hostMps, _ := om.FakeMounter.List(); len(hostMps) != 0 {
				t.Fatalf("mounted outside the operation: %+v", hostMps)
			}
			if want := map[bool]string{true: "blkid fsck", false: ""}[tc.wantMount]; strings.Join(ran, " ") != want {
				t.Fatalf("commands on the operation's exec %v, want %q", ran, want)
			}
		})
	}
}
