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
