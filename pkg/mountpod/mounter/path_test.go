package mounter

import (
	"testing"

	testingexec "k8s.io/utils/exec/testing"

	"github.com/nodeplug/nodeplug/pkg/mountpod"
	"github.com/nodeplug/nodeplug/pkg/mountpod/podexec"
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

// finder serves the plugins in served from pod "mp" (from "mp2" after the
// first lookup when moved, as a rollout would); err, when set, is its
// answer. It counts its lookups.
type finder struct {
	served  map[string]bool
	moved   bool
	err     error
	lookups int
}

func (f *finder) FindPreferring(p, _ string) (mountpod.Target, error) {
	f.lookups++
	switch {
	case f.err != nil:
		return mountpod.Target{}, f.err
	case !f.served[p]:
		return mountpod.Target{}, &mountpod.NoPodError{Plugin: p}
	case f.moved && f.lookups > 1:
		return mountpod.Target{Name: "mp2"}, nil
	}
	return mountpod.Target{Name: "mp"}, nil
}

// newRouter is the kubelet's Router over f and pods; the host has every
// utility.
func newRouter(f *finder, pods podexec.PodExecutor) *podexec.Router {
	return podexec.NewRouter(f, pods, &testingexec.FakeExec{}, podexec.Options{
		LookPath: func(file string) (string, error) { return "/usr/bin/" + file, nil }})
}
