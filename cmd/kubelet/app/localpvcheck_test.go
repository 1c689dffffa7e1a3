//go:build !nodeplug_no_localpvcheck

package app

import (
	"testing"

	"k8s.io/klog/v2/ktesting"
	"k8s.io/kubernetes/pkg/kubelet"
	"k8s.io/kubernetes/pkg/volume"
	upstreamlocal "k8s.io/kubernetes/pkg/volume/local"
	"k8s.io/mount-utils"
	utilexec "k8s.io/utils/exec"

	"github.com/nodeplug/nodeplug/pkg/localpv/volumecheck/localplugin"
	"github.com/nodeplug/nodeplug/pkg/mountpod/localadapter"
)

// TestUseLocalPVCheck: the design replaces the kubelet's local plugin with
// the checking wrapper, alone and around mount pods' wrapper (as when
// --experimental-mount-namespace is on too), and fails without a local
// plugin.
func TestUseLocalPVCheck(t *testing.T) {
	noOp := func(string) (mount.Interface, utilexec.Interface, error) { return nil, nil, nil }
	cases := map[string]struct {
		plugins func(t *testing.T) []volume.VolumePlugin
		wantErr bool
	}{
		"upstream's local plugin": {plugins: func(*testing.T) []volume.VolumePlugin { return upstreamlocal.ProbeVolumePlugins() }},
		"with mount pods": {plugins: func(t *testing.T) []volume.VolumePlugin {
			ps, err := localadapter.Wrap(upstreamlocal.ProbeVolumePlugins(), noOp)
			if err != nil {
				t.Fatal(err)
			}
			return ps
		}},
		"no local plugin": {plugins: func(*testing.T) []volume.VolumePlugin { return nil }, wantErr: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			deps := &kubelet.Dependencies{VolumePlugins: tc.plugins(t)}
			before := len(deps.VolumePlugins)
			err := useLocalPVCheck(ctx, deps)
			if tc.wantErr {
				if err == nil {
					t.Fatal("no error without a local plugin")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(deps.VolumePlugins) != before || deps.VolumePlugins[0].GetPluginName() != localplugin.PluginName {
				t.Fatalf("plugins %v", deps.VolumePlugins)
			}
			if _, ok := deps.VolumePlugins[0].(volume.DeviceMountableVolumePlugin); !ok {
				t.Fatalf("the wrapped plugin %T lost the interfaces of upstream's", deps.VolumePlugins[0])
			}
			// Mount pods' wrapper, applied after the check, must find
			// every interface it wraps.
			if _, err := localadapter.Wrap(deps.VolumePlugins, noOp); err != nil {
				t.Fatalf("mount pods cannot wrap the check's plugin: %v", err)
			}
		})
	}
}
