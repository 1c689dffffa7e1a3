package mounter

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/mount-utils"
	utilexec "k8s.io/utils/exec"
	testingexec "k8s.io/utils/exec/testing"

	"github.com/nodeplug/nodeplug/pkg/mountpod"
	"github.com/nodeplug/nodeplug/pkg/mountpod/podexec"
)

// podModel is a mount pod's mount namespace beside the host's: with
// propagate (a Bidirectional mount of the kubelet root dir) mounts go both
// ways; without it, each side sees only its own.
type podModel struct {
	mu        sync.Mutex
	host      *mount.FakeMounter
	propagate bool
	own       []string // mounts only the pod sees
	ran       []string
	gone      bool // the pod's container is gone: every exec fails
}

// ExecInPod implements podexec.PodExecutor: commands run in the model.
func (p *podModel) ExecInPod(_ context.Context, t mountpod.Target, argv []string, _ time.Duration) ([]byte, []byte, error) {
	if p.gone {
		return nil, nil, fmt.Errorf("%w: mount pod %s", podexec.ErrPodGone, t)
	}
	return p.run(t.Name, argv[0], argv[1:])
}

func (p *podModel) run(pod, cmd string, args []string) ([]byte, []byte, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.ran = append(p.ran, pod+": "+cmd+" "+strings.Join(args, " "))
	target := args[len(args)-1]
	onHost := slices.ContainsFunc(p.host.MountPoints, func(mp mount.MountPoint) bool { return mp.Path == target })
	switch {
	case cmd != "mount" && cmd != "umount": // a utility that touches no mount
	case cmd == "mount" && p.propagate:
		p.host.MountPoints = append(p.host.MountPoints, mount.MountPoint{Device: args[len(args)-2], Path: target})
	case cmd == "mount":
		p.own = append(p.own, target)
	case slices.Contains(p.own, target):
		p.own = slices.DeleteFunc(p.own, func(s string) bool { return s == target })
	case onHost && p.propagate:
		p.host.MountPoints = slices.DeleteFunc(p.host.MountPoints, func(mp mount.MountPoint) bool { return mp.Path == target })
	default:
		return []byte("umount: " + target + ": not mounted."), nil, testingexec.FakeExitError{Status: 32}
	}
	return nil, nil, nil
}

func TestMounter(t *testing.T) {
	root := t.TempDir()
	device := filepath.Join(root, "plugins/kubernetes.io/local-volume/mounts/pv1")
	consumer := filepath.Join(root, "pods/u/volumes/kubernetes.io~local-volume/pv1")
	for _, d := range []string{device, consumer} {
		if err := os.MkdirAll(d, 0o750); err != nil {
			t.Fatal(err)
		}
	}
	served := finder{served: map[string]bool{"kubernetes.io/local-volume": true}}
	hostMount := func(path string) []mount.MountPoint { return []mount.MountPoint{{Device: "x", Path: path}} }
	cases := map[string]struct {
		finder      finder
		noPropagate bool
		hostMounts  []mount.MountPoint // before the operation
		podMounts   []string
		op          func(m *Mounter) error
		wantPod     []string
		wantHostLog []string
		wantErr     any // error value (errors.Is) or pointer to a type (errors.As)
		wantHost    []string
		wantPodLeft []string
	}{
		"device mount in pod reaches the host": {finder: served,
			op:       func(m *Mounter) error { return m.Mount("/dev/loop3", device, "ext4", []string{"defaults"}) },
			wantPod:  []string{"mp: mount -t ext4 -o defaults /dev/loop3 " + device},
			wantHost: []string{device}},
		"sensitive options passed": {finder: served,
			op:       func(m *Mounter) error { return m.MountSensitive("/dev/loop3", device, "ext4", nil, []string{"key=s"}) },
			wantPod:  []string{"mp: mount -t ext4 -o key=s /dev/loop3 " + device},
			wantHost: []string{device}},
		"mount that stays in the pod is undone and fails naming the fix": {finder: served, noPropagate: true,
			op: func(m *Mounter) error { return m.Mount("/dev/loop3", device, "ext4", nil) },
			wantPod: []string{"mp: mount -t ext4 /dev/loop3 " + device,
				"mp: umount " + device},
			wantErr: new(*NotPropagatedError)},
		"bind stays on host": {finder: served,
			op:          func(m *Mounter) error { return m.Mount(device, consumer, "", []string{"bind"}) },
			wantHostLog: []string{"mount"}, wantHost: []string{consumer}},
		"tmpfs stays on host": {finder: served,
			op:          func(m *Mounter) error { return m.Mount("tmpfs", consumer, "tmpfs", nil) },
			wantHostLog: []string{"mount"}, wantHost: []string{consumer}},
		"no pod: host": {finder: finder{},
			op:          func(m *Mounter) error { return m.Mount("/dev/loop3", device, "ext4", nil) },
			wantHostLog: []string{"mount"}, wantHost: []string{device}},
		"outside root: host": {finder: served,
			op:          func(m *Mounter) error { return m.Mount("/dev/loop3", "/mnt/x", "ext4", nil) },
			wantHostLog: []string{"mount"}, wantHost: []string{"/mnt/x"}},
		"cache not synced: error, no guess": {finder: finder{err: mountpod.ErrNotSynced},
			op:      func(m *Mounter) error { return m.Mount("/dev/loop3", device, "ext4", nil) },
			wantErr: mountpod.ErrNotSynced},
		"unmount in pod": {finder: served, hostMounts: hostMount(device),
			op:      func(m *Mounter) error { return m.Unmount(device) },
			wantPod: []string{"mp: umount " + device}},
		"force unmount in pod": {finder: served, hostMounts: hostMount(device),
			op:      func(m *Mounter) error { return m.UnmountWithForce(device, 0) },
			wantPod: []string{"mp: umount -f " + device}},
		"host bind mount the pod cannot see is unmounted on the host": {finder: served, noPropagate: true, hostMounts: hostMount(consumer),
			op:          func(m *Mounter) error { return m.Unmount(consumer) },
			wantPod:     []string{"mp: umount " + consumer},
			wantHostLog: []string{"unmount"}},
		"mount only the pod sees is unmounted in the pod": {finder: served, noPropagate: true, podMounts: []string{device},
			op:      func(m *Mounter) error { return m.Unmount(device) },
			wantPod: []string{"mp: umount " + device}},
		"mounted nowhere: nothing left to do": {finder: served,
			op:      func(m *Mounter) error { return m.Unmount(device) },
			wantPod: []string{"mp: umount " + device}},
		"verify: the driver's mount reached the host": {finder: served, hostMounts: hostMount(consumer),
			op: func(m *Mounter) error { return m.VerifyPodMount(consumer) }, wantHost: []string{consumer}},
		"verify: the driver mounted nothing": {finder: served,
			op:      func(m *Mounter) error { return m.VerifyPodMount(consumer) },
			wantPod: []string{"mp: umount " + consumer}},
		"verify: the driver's mount stayed in the pod": {finder: served, noPropagate: true, podMounts: []string{consumer},
			op:      func(m *Mounter) error { return m.VerifyPodMount(consumer) },
			wantPod: []string{"mp: umount " + consumer},
			wantErr: new(*NotPropagatedError)},
		"verify: no pod serves the plugin": {finder: finder{},
			op: func(m *Mounter) error { return m.VerifyPodMount(consumer) }},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			host := mount.NewFakeMounter(slices.Clone(tc.hostMounts))
			pod := &podModel{host: host, propagate: !tc.noPropagate, own: slices.Clone(tc.podMounts)}
			m := New(context.Background(), host, root, newRouter(&tc.finder, pod))
			err := tc.op(m)
			switch want := tc.wantErr.(type) {
			case nil:
				if err != nil {
					t.Fatal(err)
				}
			case error:
				if !errors.Is(err, want) {
					t.Fatalf("err %v, want %v", err, want)
				}
			default:
				if !errors.As(err, want) || !strings.Contains(err.Error(), "mountPropagation: Bidirectional") {
					t.Fatalf("err %v, want %T naming the fix", err, want)
				}
			}
			if !slices.Equal(pod.ran, tc.wantPod) {
				t.Errorf("pod ran %q, want %q", pod.ran, tc.wantPod)
			}
			var hostLog, hostLeft []string
			for _, a := range host.GetLog() {
				hostLog = append(hostLog, a.Action)
			}
			for _, mp := range host.MountPoints {
				hostLeft = append(hostLeft, mp.Path)
			}
			if !slices.Equal(hostLog, tc.wantHostLog) || !slices.Equal(hostLeft, tc.wantHost) || len(pod.own) != 0 {
				t.Errorf("host ran %v and has %v, pod has %v; want host %v with %v, pod none", hostLog, hostLeft, pod.own, tc.wantHostLog, tc.wantHost)
			}
		})
	}
}

// TestMounterResolvesOnce: each operation looks the mount pod up once, and
// its every command (the mount and the undo of one that did not reach the
// host) runs in that pod, though the cache names another pod meanwhile. A
// pod gone between the resolve and the exec fails the mount; it is not
// moved to the host.
func TestMounterResolvesOnce(t *testing.T) {
	root := t.TempDir()
	device := filepath.Join(root, "plugins/kubernetes.io/local-volume/mounts/pv1")
	if err := os.MkdirAll(device, 0o750); err != nil {
		t.Fatal(err)
	}
	served := map[string]bool{"kubernetes.io/local-volume": true}
	cases := map[string]struct {
		noPropagate, gone bool
		hostMounts        []mount.MountPoint
		op                func(m *Mounter) error
		wantPod           []string
		wantHostLog       []string
		wantErr           error
		wantLookups       int
	}{
		"mount, check and undo in one pod": {noPropagate: true,
			op:      func(m *Mounter) error { return m.Mount("/dev/loop3", device, "ext4", nil) },
			wantPod: []string{"mp: mount -t ext4 /dev/loop3 " + device, "mp: umount " + device}, wantLookups: 1},
		"unmount": {hostMounts: []mount.MountPoint{{Device: "x", Path: device}},
			op: func(m *Mounter) error { return m.Unmount(device) }, wantPod: []string{"mp: umount " + device}, wantLookups: 1},
		"verify and undo in one pod": {noPropagate: true,
			op: func(m *Mounter) error { return m.VerifyPodMount(device) }, wantPod: []string{"mp: umount " + device}, wantLookups: 1},
		"bind: no lookup": {
			op: func(m *Mounter) error { return m.Mount("/a", device, "", []string{"bind"}) }, wantHostLog: []string{"mount"}},
		"pod gone before the mount: error, not the host": {gone: true,
			op: func(m *Mounter) error { return m.Mount("/dev/loop3", device, "ext4", nil) }, wantErr: podexec.ErrPodGone, wantLookups: 1},
		"pod gone before the unmount, host sees the mount: finished on the host (the unmount rule)": {gone: true,
			hostMounts: []mount.MountPoint{{Device: "x", Path: device}},
			op:         func(m *Mounter) error { return m.Unmount(device) }, wantHostLog: []string{"unmount"}, wantLookups: 1},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			f := &finder{served: served, moved: true}
			host := mount.NewFakeMounter(slices.Clone(tc.hostMounts))
			pod := &podModel{host: host, propagate: !tc.noPropagate, gone: tc.gone}
			err := tc.op(New(context.Background(), host, root, newRouter(f, pod)))
			if tc.wantErr != nil && !errors.Is(err, tc.wantErr) {
				t.Fatalf("err %v, want %v", err, tc.wantErr)
			}
			var hostLog []string
			for _, a := range host.GetLog() {
				hostLog = append(hostLog, a.Action)
			}
			if f.lookups != tc.wantLookups || !slices.Equal(pod.ran, tc.wantPod) || !slices.Equal(hostLog, tc.wantHostLog) {
				t.Fatalf("%d lookups, pod ran %q, host ran %v; want %d, %q, %v", f.lookups, pod.ran, hostLog, tc.wantLookups, tc.wantPod, tc.wantHostLog)
			}
		})
	}
}

// TestOperation: a format-and-mount resolves once; its utilities and its
// mount (and the undo of a mount that did not reach the host) run in that
// pod, though the cache names another meanwhile. Without a pod it is the
// host mounter.
func TestOperation(t *testing.T) {
	root := t.TempDir()
	device := filepath.Join(root, "plugins/kubernetes.io/local-volume/mounts/pv1")
	if err := os.MkdirAll(device, 0o750); err != nil {
		t.Fatal(err)
	}
	const plugin = "kubernetes.io/local-volume"
	cases := map[string]struct {
		served      bool
		noPropagate bool
		wantPod     []string
		wantHostLog []string
		wantErr     bool
	}{
		"pod: mkfs and mount in one pod": {served: true,
			wantPod: []string{"mp: mkfs.ext4 /dev/loop3", "mp: mount -t ext4 /dev/loop3 " + device}},
		"pod: a mount that stays in the pod is undone in that pod": {served: true, noPropagate: true, wantErr: true,
			wantPod: []string{"mp: mkfs.ext4 /dev/loop3", "mp: mount -t ext4 /dev/loop3 " + device, "mp: umount " + device}},
		"no pod: the host mounter": {wantHostLog: []string{"mount"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			f := &finder{served: map[string]bool{plugin: tc.served}, moved: true}
			host := mount.NewFakeMounter(nil)
			pod := &podModel{host: host, propagate: !tc.noPropagate}
			mnt, exec, err := New(context.Background(), host, root, newRouter(f, pod)).Operation(plugin)
			if err != nil {
				t.Fatal(err)
			}
			if tc.served {
				if _, err := exec.Command("mkfs.ext4", "/dev/loop3").CombinedOutput(); err != nil {
					t.Fatal(err)
				}
			}
			err = mnt.Mount("/dev/loop3", device, "ext4", nil)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err %v, want error %v", err, tc.wantErr)
			}
			var hostLog []string
			for _, a := range host.GetLog() {
				hostLog = append(hostLog, a.Action)
			}
			if f.lookups != 1 || !slices.Equal(pod.ran, tc.wantPod) || !slices.Equal(hostLog, tc.wantHostLog) {
				t.Fatalf("%d lookups, pod ran %q, host ran %v; want 1, %q, %v", f.lookups, pod.ran, hostLog, tc.wantPod, tc.wantHostLog)
			}
		})
	}
}

// TestPodOperation: a flexvolume driver's mount and the check of what it
// mounted are one operation: the driver call made with the operation's
// context runs in the pod the check and its undo run in, with one lookup,
// though the cache names another pod meanwhile.
func TestPodOperation(t *testing.T) {
	root := t.TempDir()
	const plugin = "nodeplug.io/fuse"
	target := filepath.Join(root, "pods/u/volumes/nodeplug.io~fuse/vol")
	driverPath := "/flex/nodeplug.io~fuse/fuse"
	inPod := mountpod.FlexDriverDir + "/nodeplug.io~fuse/fuse"
	cases := map[string]struct {
		served  bool
		wantPod []string
		wantErr bool
	}{
		"pod: driver, check and undo in one pod": {served: true, wantErr: true,
			wantPod: []string{"mp: " + inPod + " mount " + target + " {}", "mp: umount " + target}},
		"no pod: the driver on the host, nothing to check": {},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			f := &finder{served: map[string]bool{plugin: tc.served}, moved: true}
			host := mount.NewFakeMounter(nil)
			pod := &podModel{host: host}
			var hostRan []string
			r := podexec.NewRouter(f, pod, hostExec(&hostRan), podexec.Options{
				LookPath: func(file string) (string, error) { return file, nil }})
			ctx, check, err := New(context.Background(), host, root, r).PodOperation(context.Background(), target)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := r.ForFlexDrivers().CommandContext(ctx, driverPath, "mount", target, "{}").CombinedOutput(); err != nil {
				t.Fatal(err)
			}
			if tc.served {
				pod.own = append(pod.own, target) // what the driver mounted, in the pod only
			}
			if err := check(); (err != nil) != tc.wantErr {
				t.Fatalf("check: %v, want error %v", err, tc.wantErr)
			}
			wantHost := []string(nil)
			if !tc.served {
				wantHost = []string{driverPath + " mount " + target + " {}"}
			}
			if f.lookups != 1 || !slices.Equal(pod.ran, tc.wantPod) || !slices.Equal(hostRan, wantHost) {
				t.Fatalf("%d lookups, pod ran %q, host ran %q; want 1, %q, %q", f.lookups, pod.ran, hostRan, tc.wantPod, wantHost)
			}
		})
	}
}

// hostExec records the commands run on the host.
func hostExec(ran *[]string) *testingexec.FakeExec {
	action := func(cmd string, args ...string) utilexec.Cmd {
		*ran = append(*ran, cmd+" "+strings.Join(args, " "))
		return &testingexec.FakeCmd{CombinedOutputScript: []testingexec.FakeAction{func() ([]byte, []byte, error) { return nil, nil, nil }}}
	}
	return &testingexec.FakeExec{CommandScript: []testingexec.FakeCommandAction{action, action}}
}
