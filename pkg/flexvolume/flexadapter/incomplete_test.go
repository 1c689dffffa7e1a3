package flexadapter

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/kubernetes/pkg/volume"
	"k8s.io/mount-utils"

	"github.com/nodeplug/nodeplug/pkg/flexvolume/driver"
)

// gatedDriver logs each call; mountdevice and mount wait until the test
// creates the file gate (the test "mounts" meanwhile, as a real driver
// would), then answer answer, or sleep for 60 s when answer is "hang".
func gatedDriver(logFile, gate, answer string) string {
	tail := "echo '" + answer + "'"
	if answer == "hang" {
		tail = "sleep 60"
	}
	return `#!/bin/sh
printf '%s\n' "$*" >> ` + logFile + `
case "$1" in
init) echo '{"status":"Success","capabilities":{"attach":true,"fsGroup":false}}' ;;
mountdevice|mount) while [ ! -e ` + gate + ` ]; do sleep 0.01; done; ` + tail + ` ;;
*) echo '{"status":"Success"}' ;;
esac
`
}

// TestFailedMountIsUndone: a mountdevice or mount that mounted something
// and then failed, timed out or was killed leaves no mount behind, so that
// the next try runs the driver again instead of taking the leftover for a
// finished mount; a marker left by a kubelet that died mid-call does the
// same at the next call.
func TestFailedMountIsUndone(t *testing.T) {
	failure := `{"status":"Failure","message":"backend gave up half way"}`
	cases := map[string]struct {
		answer      string
		callTimeout time.Duration
		setUp       bool // mount (SetUp) instead of mountdevice
		wantErr     string
	}{
		"mountdevice fails after mounting":       {answer: failure, wantErr: "backend gave up half way"},
		"mountdevice killed by the call timeout": {answer: "hang", callTimeout: 3 * time.Second, wantErr: driver.ErrTimeout.Error()},
		"mount fails after mounting":             {answer: failure, setUp: true, wantErr: "backend gave up half way"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			root, tmp := t.TempDir(), t.TempDir()
			log, gate := filepath.Join(tmp, "log"), filepath.Join(tmp, "gate")
			install(t, root, "example.com~nfs", "nfs", gatedDriver(log, gate, tc.answer))
			opts := fastOptions()
			opts.Options.Driver.CallTimeout = tc.callTimeout
			p := newTestProber(t, root, opts)
			mgr, host := newPluginMgr(t, p.NewConsumerView(), nil)
			fm := host.GetMounter().(*mount.FakeMounter)
			spec := volume.NewSpecFromVolume(&v1.Volume{Name: "vol1", VolumeSource: v1.VolumeSource{
				FlexVolume: &v1.FlexVolumeSource{Driver: "example.com/nfs"}}})
			pl, err := mgr.FindAttachablePluginBySpec(spec)
			if err != nil || pl == nil {
				t.Fatalf("no attachable plugin: %v", err)
			}
			var target string
			var call func() error
			if tc.setUp {
				m, err := pl.NewMounter(spec, testPod())
				if err != nil {
					t.Fatal(err)
				}
				target = m.GetPath()
				call = func() error { return m.SetUp(volume.MounterArgs{}) }
			} else {
				at, _ := pl.NewAttacher()
				target, _ = at.GetDeviceMountPath(spec)
				call = func() error { return at.MountDevice(spec, "/dev/fake0", target, volume.DeviceMounterArgs{}) }
			}
			done := make(chan error, 1)
			go func() { done <- call() }()
			cmd := map[bool]string{true: "mount", false: "mountdevice"}[tc.setUp]
			eventually(t, "the driver call", func() bool {
				c := calls(t, log)
				return len(c) > 0 && strings.Fields(c[len(c)-1])[0] == cmd
			})
			if err := fm.Mount("tmpfs", target, "tmpfs", nil); err != nil { // what the driver mounted
				t.Fatal(err)
			}
			if err := os.WriteFile(gate, nil, 0o600); err != nil {
				t.Fatal(err)
			}
			err = <-done
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("err %v, want %q", err, tc.wantErr)
			}
			if mps, _ := fm.List(); len(mps) != 0 {
				t.Fatalf("left mounted: %+v", mps)
			}
			// The next try runs the driver again.
			before := len(calls(t, log))
			_ = call()
			if len(calls(t, log)) == before {
				t.Fatal("the retry did not run the driver")
			}
		})
	}
}

// TestPendingMarkerFromDeadKubelet: a mount found with a pending marker is
// from a call that never finished; it is undone and the driver runs again.
func TestPendingMarkerFromDeadKubelet(t *testing.T) {
	root, tmp := t.TempDir(), t.TempDir()
	log, gate := filepath.Join(tmp, "log"), filepath.Join(tmp, "gate")
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	install(t, root, "example.com~nfs", "nfs", gatedDriver(log, gate, success))
	p := newTestProber(t, root, fastOptions())
	mgr, host := newPluginMgr(t, p.NewConsumerView(), nil)
	fm := host.GetMounter().(*mount.FakeMounter)
	spec := volume.NewSpecFromVolume(&v1.Volume{Name: "vol1", VolumeSource: v1.VolumeSource{
		FlexVolume: &v1.FlexVolumeSource{Driver: "example.com/nfs"}}})
	pl, _ := mgr.FindAttachablePluginBySpec(spec)
	at, _ := pl.NewAttacher()
	target, _ := at.GetDeviceMountPath(spec)
	fp := pl.(*attachablePlugin).plugin

	cases := map[string]struct {
		marker      bool
		wantDriver  bool
		wantMounted bool
	}{
		"mounted, no marker: a finished call, left alone": {wantMounted: true},
		"mounted, marker left: undone and run again":      {marker: true, wantDriver: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if err := os.MkdirAll(target, 0o750); err != nil {
				t.Fatal(err)
			}
			fm.MountPoints = nil
			if err := fm.Mount("tmpfs", target, "tmpfs", nil); err != nil {
				t.Fatal(err)
			}
			if tc.marker {
				marker := fp.pendingMarker(target)
				os.MkdirAll(filepath.Dir(marker), 0o750)
				if err := os.WriteFile(marker, nil, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			before := len(calls(t, log))
			if err := at.MountDevice(spec, "/dev/fake0", target, volume.DeviceMounterArgs{}); err != nil {
				t.Fatal(err)
			}
			if ran := len(calls(t, log)) > before; ran != tc.wantDriver {
				t.Fatalf("driver ran: %v, want %v", ran, tc.wantDriver)
			}
			mps, _ := fm.List()
			if (len(mps) == 1) != tc.wantMounted {
				t.Fatalf("mounts %+v", mps)
			}
			if _, err := os.Stat(fp.pendingMarker(target)); err == nil {
				t.Fatal("the pending marker is left after a finished call")
			}
		})
	}
}
