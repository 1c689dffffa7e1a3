package handlers

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"
	draplugin "k8s.io/kubernetes/pkg/kubelet/cm/dra/plugin"

	"github.com/nodeplug/nodeplug/pkg/kubelet/pluginwatcher"
)

// wipingDelay stands in for upstream's 30 s grace period
// (defaultWipingDelay in pkg/kubelet/cm/dra/manager.go).
const wipingDelay = 2 * time.Second

// TestDRAConnectionLoss: losing a plugin's connection is not a
// de-registration. Upstream's DRA manager keeps the plugin and wipes the
// driver's ResourceSlices only when no instance of it has been connected
// for its grace period; nodeplug's watcher keeps a registered DRA socket
// that refuses connections registered and in place, so that it neither
// starts that timer where upstream would not nor ends a plugin that comes
// back in time.
func TestDRAConnectionLoss(t *testing.T) {
	for name, tc := range map[string]struct {
		// policy: the DRA handler's Policy; false: the default (owner
		// election, stale sockets removed and de-registered).
		policy     bool
		act        func(r *draRun, t *testing.T)
		wantDeregs int
		// maxDeregs, when set, allows up to that many: a restart that
		// removes and re-creates both sockets at once can be seen as two
		// removals by the watcher (the old registration socket's and the
		// old service's), each de-registering the endpoint before the new
		// one registers; the DRA manager is left with the plugin either way.
		maxDeregs   int
		wantWipe    bool
		wantRegFile bool
	}{
		"registration server dies, the service serves on: nothing changes": {
			policy: true, act: (*draRun).killRegistration, wantRegFile: true,
		},
		"the same under the default policy, for contrast: de-registered, then wiped": {
			act: (*draRun).killRegistration, wantDeregs: 1, wantWipe: true,
		},
		"the plugin dies: it stays registered, its slices are wiped after the grace period": {
			policy: true, act: (*draRun).killBoth, wantWipe: true, wantRegFile: true,
		},
		"the plugin restarts within the grace period: nothing is wiped": {
			policy: true, act: (*draRun).restart, wantDeregs: 1, maxDeregs: 2, wantRegFile: true,
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			r := startDRARun(t, tc.policy)
			tc.act(r, t)
			time.Sleep(2 * wipingDelay)

			if n := len(r.rec.ops("deregister")); n < tc.wantDeregs || n > max(tc.wantDeregs, tc.maxDeregs) {
				t.Errorf("%d de-registrations, want %d to %d: %+v", n, tc.wantDeregs, max(tc.wantDeregs, tc.maxDeregs), r.rec.ops("deregister"))
			}
			wipes := r.driverWipes()
			switch {
			case tc.wantWipe && len(wipes) == 0:
				t.Error("the driver's ResourceSlices were not wiped")
			case tc.wantWipe && wipes[0].Sub(r.killedAt) < wipingDelay:
				t.Errorf("ResourceSlices wiped %v after the plugin died, within the %v grace period", wipes[0].Sub(r.killedAt), wipingDelay)
			case !tc.wantWipe && len(wipes) > 0:
				t.Errorf("ResourceSlices wiped %v after the plugin died", wipes[0].Sub(r.killedAt))
			}
			if got := exists(r.regPath); got != tc.wantRegFile {
				t.Errorf("registration socket exists: %v, want %v", got, tc.wantRegFile)
			}
			if _, err := r.pm.GetPlugin(driver); tc.policy && err != nil {
				t.Errorf("the DRA manager lost the driver: %v", err)
			}
		})
	}
}

// draRun is one DRA plugin registered through nodeplug's watcher with
// upstream's DRA plugin manager: a registration socket and a service
// socket, each served, and killable, on its own.
type draRun struct {
	pm               *draplugin.DRAPluginManager
	rec              *recorder
	info             *registerapi.PluginInfo
	regPath, svcPath string
	reg              *regPlugin
	svcLis           *net.UnixListener
	svcSrv           *grpc.Server
	killedAt         time.Time

	mu    sync.Mutex
	wipes []time.Time
}

func startDRARun(t *testing.T, policy bool) *draRun {
	t.Helper()
	dir := shortDir(t, "dra")
	r := &draRun{regPath: filepath.Join(dir, driver+"-reg.sock"), svcPath: filepath.Join(dir, "dra.sock")}
	client := fake.NewClientset()
	client.PrependReactor("delete-collection", "resourceslices", r.recordWipe)
	r.pm = newDRAManager(t, client, wipingDelay)
	r.rec = &recorder{upstream: r.pm}
	var h pluginwatcher.Handler = r.rec
	if policy {
		h = DRA(r.rec)
	}
	startDRAWatcher(t, dir, h)
	r.info = &registerapi.PluginInfo{Type: pluginwatcher.DRAPlugin, Name: driver, Endpoint: r.svcPath, SupportedVersions: []string{"v1.DRAPlugin"}}
	r.serve(t)
	// Let the DRA manager's connection to the service come up.
	time.Sleep(200 * time.Millisecond)
	return r
}

// recordWipe records a deletion of the driver's ResourceSlices (not the
// DRA manager's wipe of all of them at start).
func (r *draRun) recordWipe(a clienttesting.Action) (bool, runtime.Object, error) {
	sel := a.(clienttesting.DeleteCollectionAction).GetListRestrictions().Fields.String()
	if strings.Contains(sel, resourceapi.ResourceSliceSelectorDriver+"="+driver) {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.wipes = append(r.wipes, time.Now())
	}
	return true, nil, nil
}

func (r *draRun) driverWipes() []time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]time.Time(nil), r.wipes...)
}

// serve starts the service, then the registration socket, and waits until
// the plugin is registered.
func (r *draRun) serve(t *testing.T) {
	t.Helper()
	r.svcLis, r.svcSrv = serveGRPC(t, r.svcPath)
	go func() { _ = r.svcSrv.Serve(r.svcLis) }()
	r.reg = startRegPlugin(t, r.regPath, r.info)
	if s := r.reg.waitStatus(t); !s.PluginRegistered {
		t.Fatalf("status %+v, want registered", s)
	}
}

func (r *draRun) killRegistration(*testing.T) {
	r.killedAt = time.Now()
	kill(r.reg.lis, r.reg.srv)
}

func (r *draRun) killBoth(*testing.T) {
	r.killedAt = time.Now()
	kill(r.reg.lis, r.reg.srv)
	kill(r.svcLis, r.svcSrv)
}

// restart kills the plugin and starts it again a fifth of the grace
// period later, at the same paths, as a restarted container does.
func (r *draRun) restart(t *testing.T) {
	r.killBoth(t)
	time.Sleep(wipingDelay / 5)
	for _, p := range []string{r.regPath, r.svcPath} {
		if err := os.Remove(p); err != nil {
			t.Fatal(err)
		}
	}
	r.serve(t)
}

func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}
