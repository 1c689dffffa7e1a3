// This test runs in the unit tier (hack/test.sh): it needs no root and no
// cluster, only a temporary directory. The root module requires
// github.com/nodeplug/registrar and replaces it with
// staging/src/github.com/nodeplug/registrar, so it tests the library as it
// is in this tree.

package pluginwatcher

import (
	"context"
	"testing"
	"time"

	"github.com/nodeplug/registrar"
)

// TestRegistrarLibrary: a plugin built on nodeplug's registrar library
// registers under the Reject identity policy, learns the verdict, and is
// de-registered by Stop; a restarted instance (new socket) takes over.
func TestRegistrarLibrary(t *testing.T) {
	dir := testDir(t)
	h := newRecordingHandler(t)
	opts := fastOptions()
	opts.IdentityPolicy = IdentityReject
	startWatcher(t, dir, opts, DevicePlugin, h)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	start := func() registrar.Registrar {
		r, err := registrar.New(registrar.Config{
			Dir: dir, Type: DevicePlugin, Name: "example.com/gpu", SupportedVersions: []string{"v1beta1"},
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := r.Start(ctx); err != nil {
			t.Fatal(err)
		}
		if s, err := r.WaitForStatus(ctx); err != nil || !s.Registered {
			t.Fatalf("status = %+v, %v", s, err)
		}
		return r
	}
	first := start()
	second := start()
	if ep, _ := h.current("example.com/gpu"); ep != second.SocketPath() {
		t.Errorf("registered endpoint %q, want the newer socket %q", ep, second.SocketPath())
	}
	first.Stop()
	second.Stop()
	eventually(t, "de-registration", func() bool {
		_, ok := h.current("example.com/gpu")
		return !ok
	})
}
