package driver

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/nodeplug/nodeplug/pkg/util/groupexec"
)

// writeDriver writes an executable shell driver and returns its path.
func writeDriver(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "drv")
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func newTestDriver(path string, cfg Config) Driver {
	return New(path, groupexec.New(), cfg)
}

func TestArgumentOrder(t *testing.T) {
	logFile := filepath.Join(t.TempDir(), "args")
	drv := newTestDriver(writeDriver(t, `printf '%s\n' "$@" > `+logFile+`
echo '{"status":"Success","device":"/dev/loop9","attached":true,"volumeName":"v","volumeNewSize":7}'
`), Config{})
	opts := &VolumeOptions{FSType: "ext4", PVOrVolumeName: "pv1"}
	js, _ := opts.JSON()
	ctx := t.Context()
	tests := []struct {
		name string
		call func() error
		want []string
	}{
		{"init", func() error { _, err := drv.Init(ctx); return err }, []string{"init"}},
		{"getvolumename", func() error { _, err := drv.GetVolumeName(ctx, opts); return err }, []string{"getvolumename", js}},
		{"attach", func() error { _, err := drv.Attach(ctx, opts, "node1"); return err }, []string{"attach", js, "node1"}},
		{"detach", func() error { return drv.Detach(ctx, "pv1", "node1") }, []string{"detach", "pv1", "node1"}},
		{"waitforattach", func() error { _, err := drv.WaitForAttach(ctx, "/dev/x", opts, time.Minute); return err }, []string{"waitforattach", "/dev/x", js}},
		{"isattached", func() error { _, err := drv.IsAttached(ctx, opts, "node1"); return err }, []string{"isattached", js, "node1"}},
		{"mountdevice", func() error { return drv.MountDevice(ctx, "/gm", "/dev/x", opts) }, []string{"mountdevice", "/gm", "/dev/x", js}},
		{"unmountdevice", func() error { return drv.UnmountDevice(ctx, "/gm") }, []string{"unmountdevice", "/gm"}},
		{"mount", func() error { return drv.Mount(ctx, "/pod/vol", opts) }, []string{"mount", "/pod/vol", js}},
		{"unmount", func() error { return drv.Unmount(ctx, "/pod/vol") }, []string{"unmount", "/pod/vol"}},
		{"expandvolume", func() error { _, err := drv.ExpandVolume(ctx, opts, "/dev/x", 20, 10); return err }, []string{"expandvolume", js, "/dev/x", "20", "10"}},
		{"expandfs", func() error { return drv.ExpandFS(ctx, opts, "/dev/x", "/gm", 20, 10) }, []string{"expandfs", js, "/dev/x", "/gm", "20", "10"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.call(); err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile(logFile)
			if err != nil {
				t.Fatal(err)
			}
			got := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("argv (-want +got):\n%s", diff)
			}
		})
	}
}

func TestResults(t *testing.T) {
	drv := newTestDriver(writeDriver(t, `echo '{"status":"Success","device":"/dev/loop9","attached":true,"volumeName":"v","volumeNewSize":7}'`), Config{})
	ctx := t.Context()
	if dev, err := drv.Attach(ctx, nil, "n"); err != nil || dev != "/dev/loop9" {
		t.Errorf("Attach = %q, %v", dev, err)
	}
	if ok, err := drv.IsAttached(ctx, nil, "n"); err != nil || !ok {
		t.Errorf("IsAttached = %v, %v", ok, err)
	}
	if n, err := drv.ExpandVolume(ctx, nil, "/dev/x", 2, 1); err != nil || n != 7 {
		t.Errorf("ExpandVolume = %d, %v", n, err)
	}
	if name, err := drv.GetVolumeName(ctx, nil); err != nil || name != "v" {
		t.Errorf("GetVolumeName = %q, %v", name, err)
	}
}

func TestOptionKeys(t *testing.T) {
	fsGroup := int64(1234)
	opts := &VolumeOptions{
		FSType: "xfs", ReadOnly: true, PVOrVolumeName: "vol",
		Pod:     &PodInfo{Name: "p", Namespace: "ns", UID: "uid-1", ServiceAccountName: "sa"},
		FSGroup: &fsGroup,
		Secrets: map[string][]byte{"password": []byte("s3cr=t")},
		Options: map[string]string{"custom": "x", OptionFSType: "overridden"},
	}
	js, err := opts.JSON()
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]string
	if err := json.Unmarshal([]byte(js), &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"kubernetes.io/fsType":              "overridden",
		"kubernetes.io/readwrite":           "ro",
		"kubernetes.io/pvOrVolumeName":      "vol",
		"kubernetes.io/pod.name":            "p",
		"kubernetes.io/pod.namespace":       "ns",
		"kubernetes.io/pod.uid":             "uid-1",
		"kubernetes.io/serviceAccount.name": "sa",
		"kubernetes.io/mounterArgs.FsGroup": "1234",
		"kubernetes.io/secret/password":     "czNjcj10",
		"custom":                            "x",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("options (-want +got):\n%s", diff)
	}
}

func TestCapabilities(t *testing.T) {
	def := DefaultCapabilities()
	tests := []struct {
		name   string
		output string
		want   Capabilities
	}{
		{"absent", `{"status":"Success"}`, def},
		{"null", `{"status":"Success","capabilities":null}`, def},
		{"partial keeps defaults", `{"status":"Success","capabilities":{"attach":false}}`,
			Capabilities{Attach: false, SELinuxRelabel: true, FSGroup: true, RequiresFSResize: true}},
		{"all", `{"status":"Success","capabilities":{"attach":false,"selinuxRelabel":false,"supportsMetrics":true,"fsGroup":false,"requiresFSResize":false}}`,
			Capabilities{SupportsMetrics: true}},
		{"keys are case-insensitive", `{"status":"Success","Capabilities":{"Attach":false}}`,
			Capabilities{Attach: false, SELinuxRelabel: true, FSGroup: true, RequiresFSResize: true}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			drv := newTestDriver(writeDriver(t, "echo '"+tc.output+"'\n"), Config{})
			got, err := drv.Init(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("capabilities (-want +got):\n%s", diff)
			}
		})
	}
}

func TestNotSupportedIsRemembered(t *testing.T) {
	count := filepath.Join(t.TempDir(), "count")
	drv := newTestDriver(writeDriver(t, `echo x >> `+count+`
echo '{"status":"Not supported"}'
`), Config{})
	for i := 0; i < 3; i++ {
		if err := drv.Mount(t.Context(), "/d", nil); !IsNotSupported(err) {
			t.Fatalf("Mount: got %v, want ErrNotSupported", err)
		}
	}
	b, _ := os.ReadFile(count)
	if n := strings.Count(string(b), "x"); n != 1 {
		t.Errorf("driver ran %d times, want 1", n)
	}
	if err := drv.Unmount(t.Context(), "/d"); !IsNotSupported(err) {
		t.Fatalf("Unmount: got %v", err)
	}
}

func TestFailureStatus(t *testing.T) {
	drv := newTestDriver(writeDriver(t, `echo '{"status":"Failure","message":"no such volume"}'; exit 1`), Config{})
	err := drv.Mount(t.Context(), "/d", nil)
	if !errors.Is(err, ErrFailure) || !strings.Contains(err.Error(), "no such volume") {
		t.Fatalf("got %v, want ErrFailure with the driver's message", err)
	}
}

func TestStderrFallback(t *testing.T) {
	drv := newTestDriver(writeDriver(t, `echo '{"status":"Success"}' >&2`), Config{})
	if _, err := drv.Init(t.Context()); err != nil {
		t.Fatal(err)
	}
}

func TestParentContextCanceled(t *testing.T) {
	drv := newTestDriver(writeDriver(t, "sleep 30\n"), Config{KillGrace: time.Second})
	ctx, cancel := context.WithCancel(t.Context())
	time.AfterFunc(100*time.Millisecond, cancel)
	_, err := drv.Init(ctx)
	if err == nil || errors.Is(err, ErrTimeout) || !strings.Contains(err.Error(), "canceled") {
		t.Fatalf("got %v, want a cancellation error", err)
	}
}
