package mounter

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"k8s.io/mount-utils"
	utilexec "k8s.io/utils/exec"
	testingexec "k8s.io/utils/exec/testing"

	"github.com/nodeplug/nodeplug/pkg/mountpod"
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
}

func (p *podModel) ForPlugin(plugin string) utilexec.Interface {
	fe := &testingexec.FakeExec{}
	action := func(cmd string, args ...string) utilexec.Cmd {
		return &testingexec.FakeCmd{CombinedOutputScript: []testingexec.FakeAction{func() ([]byte, []byte, error) {
			return p.run(plugin, cmd, args)
		}}}
	}
	fe.CommandScript = []testingexec.FakeCommandAction{action, action}
	return fe
}

func (p *podModel) run(plugin, cmd string, args []string) ([]byte, []byte, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.ran = append(p.ran, plugin+": "+cmd+" "+strings.Join(args, " "))
	target := args[len(args)-1]
	onHost := slices.ContainsFunc(p.host.MountPoints, func(mp mount.MountPoint) bool { return mp.Path == target })
	switch {
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
			wantPod:  []string{"kubernetes.io/local-volume: mount -t ext4 -o defaults /dev/loop3 " + device},
			wantHost: []string{device}},
		"sensitive options passed": {finder: served,
			op:       func(m *Mounter) error { return m.MountSensitive("/dev/loop3", device, "ext4", nil, []string{"key=s"}) },
			wantPod:  []string{"kubernetes.io/local-volume: mount -t ext4 -o key=s /dev/loop3 " + device},
			wantHost: []string{device}},
		"mount that stays in the pod is undone and fails naming the fix": {finder: served, noPropagate: true,
			op: func(m *Mounter) error { return m.Mount("/dev/loop3", device, "ext4", nil) },
			wantPod: []string{"kubernetes.io/local-volume: mount -t ext4 /dev/loop3 " + device,
				"kubernetes.io/local-volume: umount " + device},
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
			wantPod: []string{"kubernetes.io/local-volume: umount " + device}},
		"force unmount in pod": {finder: served, hostMounts: hostMount(device),
			op:      func(m *Mounter) error { return m.UnmountWithForce(device, 0) },
			wantPod: []string{"kubernetes.io/local-volume: umount -f " + device}},
		"host bind mount the pod cannot see is unmounted on the host": {finder: served, noPropagate: true, hostMounts: hostMount(consumer),
			op:          func(m *Mounter) error { return m.Unmount(consumer) },
			wantPod:     []string{"kubernetes.io/local-volume: umount " + consumer},
			wantHostLog: []string{"unmount"}},
		"mount only the pod sees is unmounted in the pod": {finder: served, noPropagate: true, podMounts: []string{device},
			op:      func(m *Mounter) error { return m.Unmount(device) },
			wantPod: []string{"kubernetes.io/local-volume: umount " + device}},
		"mounted nowhere: nothing left to do": {finder: served,
			op:      func(m *Mounter) error { return m.Unmount(device) },
			wantPod: []string{"kubernetes.io/local-volume: umount " + device}},
		"verify: the driver's mount reached the host": {finder: served, hostMounts: hostMount(consumer),
			op: func(m *Mounter) error { return m.VerifyPodMount(consumer) }, wantHost: []string{consumer}},
		"verify: the driver mounted nothing": {finder: served,
			op:      func(m *Mounter) error { return m.VerifyPodMount(consumer) },
			wantPod: []string{"kubernetes.io/local-volume: umount " + consumer}},
		"verify: the driver's mount stayed in the pod": {finder: served, noPropagate: true, podMounts: []string{consumer},
			op:      func(m *Mounter) error { return m.VerifyPodMount(consumer) },
			wantPod: []string{"kubernetes.io/local-volume: umount " + consumer},
			wantErr: new(*NotPropagatedError)},
		"verify: no pod serves the plugin": {finder: finder{},
			op: func(m *Mounter) error { return m.VerifyPodMount(consumer) }},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			host := mount.NewFakeMounter(slices.Clone(tc.hostMounts))
			pod := &podModel{host: host, propagate: !tc.noPropagate, own: slices.Clone(tc.podMounts)}
			m := New(context.Background(), host, root, tc.finder, pod)
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
