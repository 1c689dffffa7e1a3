package mounter

import (
	"testing"

	"k8s.io/apimachinery/pkg/types"

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
