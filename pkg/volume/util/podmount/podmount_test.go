package podmount

import (
	"context"
	"errors"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/mount-utils"
	utilexec "k8s.io/utils/exec"
	testingexec "k8s.io/utils/exec/testing"

	"github.com/nodeplug/nodeplug/pkg/mountpod"
)

const root = "/var/lib/kubelet"

func TestPluginForPath(t *testing.T) {
	cases := map[string]string{
		root + "/pods/u1/volumes/kubernetes.io~local-volume/pv1":                     "kubernetes.io/local-volume",
		root + "/pods/u1/volumes/nodeplug.io~fuse/vol":                               "nodeplug.io/fuse",
		root + "/pods/u1/volumes/lvm/vol":                                            "lvm",
		root + "/plugins/kubernetes.io/local-volume/mounts/pv1":                      "kubernetes.io/local-volume",
		root + "/plugins/kubernetes.io/flexvolume/acme.com/attach/mounts/vol1":       "acme.com/attach",
		root + "/plugins/kubernetes.io/flexvolume/lvm/mounts/vol1":                   "lvm",
		root + "/plugins/kubernetes.io/flexvolume/mounts":                            "",
		root + "/pods/u1/volume-subpaths/v/c/0":                                      "",
		root + "/pods/u1/volumes":                                                    "",
		root:                                                                         "",
		"/mnt/elsewhere":                                                             "",
		"/var/lib/kubelet-other/pods/u1/volumes/kubernetes.io~local-volume/pv1":      "",
		root + "/pods/u1/volumes/kubernetes.io~local-volume/pv1/../../../../../../x": "",
	}
	for path, want := range cases {
		if got := PluginForPath(root, path); got != want {
			t.Errorf("PluginForPath(%q) = %q, want %q", path, got, want)
		}
	}
}

type finder struct {
	served map[string]bool
	err    error
}

func (f finder) Find(p string) (mountpod.Target, error) {
	if f.err != nil {
		return mountpod.Target{}, f.err
	}
	if f.served[p] {
		return mountpod.Target{Name: "mp"}, nil
	}
	return mountpod.Target{}, &mountpod.NoPodError{Plugin: p}
}
func (f finder) Served() map[string]mountpod.Target { return nil }
func (f finder) Namespace() string                  { return "kube-mount" }
func (f finder) Runs(types.UID) bool                { return false }

type router struct{ ran *[]string }

func (r router) ForPlugin(plugin string) utilexec.Interface {
	fe := &testingexec.FakeExec{}
	fe.CommandScript = []testingexec.FakeCommandAction{func(cmd string, args ...string) utilexec.Cmd {
		*r.ran = append(*r.ran, plugin+": "+cmd+" "+strings.Join(args, " "))
		return &testingexec.FakeCmd{CombinedOutputScript: []testingexec.FakeAction{func() ([]byte, []byte, error) { return nil, nil, nil }}}
	}}
	return fe
}

func TestMounter(t *testing.T) {
	local := root + "/plugins/kubernetes.io/local-volume/mounts/pv1"
	served := finder{served: map[string]bool{"kubernetes.io/local-volume": true}}
	cases := map[string]struct {
		finder               finder
		op                   func(m *Mounter) error
		wantPod, wantHostLog string
		wantErr              error
	}{
		"device mount in pod": {finder: served,
			op:      func(m *Mounter) error { return m.Mount("/dev/loop3", local, "ext4", []string{"defaults"}) },
			wantPod: "kubernetes.io/local-volume: mount -t ext4 -o defaults /dev/loop3 " + local},
		"sensitive options passed": {finder: served,
			op:      func(m *Mounter) error { return m.MountSensitive("/dev/loop3", local, "ext4", nil, []string{"key=s"}) },
			wantPod: "kubernetes.io/local-volume: mount -t ext4 -o key=s /dev/loop3 " + local},
		"bind stays on host": {finder: served,
			op: func(m *Mounter) error {
				return m.Mount(local, root+"/pods/u/volumes/kubernetes.io~local-volume/pv1", "", []string{"bind"})
			},
			wantHostLog: "mount"},
		"tmpfs stays on host": {finder: served,
			op: func(m *Mounter) error {
				return m.Mount("tmpfs", root+"/pods/u/volumes/kubernetes.io~local-volume/pv1", "tmpfs", nil)
			},
			wantHostLog: "mount"},
		"no pod: host": {finder: finder{},
			op:          func(m *Mounter) error { return m.Mount("/dev/loop3", local, "ext4", nil) },
			wantHostLog: "mount"},
		"unmount in pod": {finder: served,
			op:      func(m *Mounter) error { return m.Unmount(local) },
			wantPod: "kubernetes.io/local-volume: umount " + local},
		"force unmount in pod": {finder: served,
			op:      func(m *Mounter) error { return m.UnmountWithForce(local, 0) },
			wantPod: "kubernetes.io/local-volume: umount -f " + local},
		"outside root: host": {finder: served,
			op:          func(m *Mounter) error { return m.Mount("/dev/loop3", "/mnt/x", "ext4", nil) },
			wantHostLog: "mount"},
		"cache not synced: error, no guess": {finder: finder{err: mountpod.ErrNotSynced},
			op:      func(m *Mounter) error { return m.Mount("/dev/loop3", local, "ext4", nil) },
			wantErr: mountpod.ErrNotSynced},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var ran []string
			host := mount.NewFakeMounter(nil)
			m := New(context.Background(), host, root, tc.finder, router{&ran})
			err := tc.op(m)
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) || len(ran)+len(host.GetLog()) != 0 {
					t.Fatalf("err %v ran %v host %v", err, ran, host.GetLog())
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tc.wantPod != "" && (len(ran) != 1 || ran[0] != tc.wantPod || len(host.GetLog()) != 0) {
				t.Fatalf("pod ran %v, host %v; want %q", ran, host.GetLog(), tc.wantPod)
			}
			if tc.wantHostLog != "" && (len(ran) != 0 || len(host.GetLog()) != 1 || host.GetLog()[0].Action != tc.wantHostLog) {
				t.Fatalf("pod ran %v, host %v; want host %s", ran, host.GetLog(), tc.wantHostLog)
			}
		})
	}
}
