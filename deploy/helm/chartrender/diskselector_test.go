package chartrender

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/nodeplug/nodeplug/pkg/localpv/config"
)

// TestDiskSelector: a class's diskSelector reaches the ConfigMap whole, its
// hostDir defaults to udev's links as the master's does, and the watcher
// sees a link directory in /dev/disk through its /dev mount.
func TestDiskSelector(t *testing.T) {
	r := render(t, testRelease, testNS, readValues(t, "testdata/disk-selector-values.yaml"))
	cfg := r.config("local-volume-provisioner-config")
	wc := container(t, r.daemonSet("local-volume-provisioner-watcher").Spec.Template.Spec, "watcher")
	mounts := mountsByPath(r.daemonSet("local-volume-provisioner-watcher").Spec.Template.Spec, wc)
	tests := []struct {
		name  string
		check func(t *testing.T)
	}{
		{name: "every field of the selector is passed through", check: func(t *testing.T) {
			rotational, minSize, maxSize := false, resource.MustParse("100Gi"), resource.MustParse("4Ti")
			want := &config.DiskSelector{
				Rotational: &rotational, MinSize: &minSize, MaxSize: &maxSize,
				Models: []string{"Samsung SSD*", "INTEL SSDPE*"}, Vendors: []string{"ATA"}, AcceptSignatures: true,
			}
			if diff := cmp.Diff(want, cfg.StorageClassMap["local-ssd"].DiskSelector); diff != "" {
				t.Errorf("local-ssd diskSelector (-want +got):\n%s", diff)
			}
		}},
		{name: "an empty selector stays a selector", check: func(t *testing.T) {
			if got := cfg.StorageClassMap["local-any"].DiskSelector; got == nil || !cmp.Equal(*got, config.DiskSelector{}) {
				t.Errorf("local-any diskSelector %+v, want {}", got)
			}
		}},
		{name: "hostDir defaults to /dev/disk/by-id and mountDir to hostDir", check: func(t *testing.T) {
			ssd := cfg.StorageClassMap["local-ssd"]
			if ssd.HostDir != config.DefaultLinkDir || ssd.MountDir != config.DefaultLinkDir || ssd.NamePattern != "wwn-*,nvme-eui.*" {
				t.Errorf("local-ssd %+v", ssd)
			}
		}},
		{name: "the watcher sees /dev/disk through /dev, not through a mount of its own", check: func(t *testing.T) {
			if m, ok := mounts[config.DefaultLinkDir]; ok {
				t.Errorf("watcher mounts %s: %+v", config.DefaultLinkDir, m)
			}
			if mounts["/dev"].HostPath != "/dev" {
				t.Errorf("watcher mounts /dev as %+v", mounts["/dev"])
			}
		}},
		{name: "a link directory elsewhere is mounted as any class's", check: func(t *testing.T) {
			if m := mounts["/srv/disk-links"]; m.HostPath != "/srv/disk-links" || m.Propagation != "HostToContainer" {
				t.Errorf("watcher mount /srv/disk-links %+v", m)
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, tc.check)
	}
}
