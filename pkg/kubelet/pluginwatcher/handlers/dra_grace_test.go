package handlers

import (
	"errors"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"slices"
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

// sentinel is a second DRA driver registered with the same DRA manager;
// see draRun.graceOver.
const sentinel = "sentinel.example.com"

// TestDRAConnectionLoss: losing a plugin's connection is not a
// de-registration. Upstream's DRA manager keeps the plugin and wipes the
// driver's ResourceSlices only when no instance of it has been connected
// for its grace period; nodeplug's watcher keeps a registered DRA socket
// that refuses connections registered and in place, so that it neither
// starts that timer where upstream would not nor ends a plugin that comes
// back in time.
//
// Nothing is checked after a sleep: each case waits for what the watcher
// does about the loss (settle), then for the end of the grace period
// (graceOver), then checks.
func TestDRAConnectionLoss(t *testing.T) {
	tests := []draLossCase{
		{
			name:   "registration server dies, the service serves on: nothing changes",
			policy: true, act: (*draRun).killRegistration, settle: (*draRun).keptRefusing, wantRegFile: true,
		},
		{
			name: "the same under the default policy, for contrast: de-registered, then wiped",
			act:  (*draRun).killRegistration, settle: (*draRun).deregistered, wantDeregs: 1, wantWipe: true,
		},
		{
			name:   "the plugin dies: it stays registered, its slices are wiped after the grace period",
			policy: true, act: (*draRun).killBoth, settle: (*draRun).keptRefusing, wantWipe: true, wantRegFile: true,
		},
		{
			// restart itself waits until the plugin is registered again.
			name:   "the plugin restarts within the grace period: nothing is wiped",
			policy: true, act: (*draRun).restart, settle: func(*draRun, *testing.T) {}, wantDeregs: 1, maxDeregs: 2, wantRegFile: true,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := startDRARun(t, tc.policy)
			tc.act(r, t)
			tc.settle(r, t)
			r.graceOver(t)
			if tc.wantWipe {
				eventually(t, "the driver's ResourceSlices wiped", func() bool { return len(r.wipesOf(driver)) > 0 })
			}
			tc.check(t, r)
		})
	}
}

// draLossCase is a case of TestDRAConnectionLoss.
type draLossCase struct {
	name string
	// policy: the DRA handler's Policy; false: the default (owner
	// election, stale sockets removed and de-registered).
	policy bool
	act    func(r *draRun, t *testing.T)
	// settle waits for the watcher's answer to act.
	settle     func(r *draRun, t *testing.T)
	wantDeregs int
	// maxDeregs, when set, allows up to that many: a restart that
	// removes and re-creates both sockets at once can be seen as two
	// removals by the watcher (the old registration socket's and the
	// old service's), each de-registering the endpoint before the new
	// one registers; the DRA manager is left with the plugin either way.
	maxDeregs   int
	wantWipe    bool
	wantRegFile bool
}

// check compares what r's watcher and DRA manager did with the case.
func (tc draLossCase) check(t *testing.T, r *draRun) {
	t.Helper()
	if n := len(r.rec.ops("deregister")); n < tc.wantDeregs || n > max(tc.wantDeregs, tc.maxDeregs) {
		t.Errorf("%d de-registrations, want %d to %d: %+v", n, tc.wantDeregs, max(tc.wantDeregs, tc.maxDeregs), r.rec.ops("deregister"))
	}
	wipes := r.wipesOf(driver)
	switch {
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
}

// draRun is one DRA plugin registered through nodeplug's watcher with
// upstream's DRA plugin manager: a registration socket and a service
// socket, each served, and killable, on its own. Beside it, the sentinel
// driver's service, registered with the DRA manager directly.
type draRun struct {
	pm               *draplugin.DRAPluginManager
	rec              *recorder
	logs             *logCapture
	info             *registerapi.PluginInfo
	regPath, svcPath string
	reg              *regPlugin
	svcLis           *net.UnixListener
	svcSrv           *grpc.Server
	sentinelLis      *net.UnixListener
	sentinelSrv      *grpc.Server
	killedAt         time.Time

	mu    sync.Mutex
	wipes map[string][]time.Time // by driver
}

func startDRARun(t *testing.T, policy bool) *draRun {
	t.Helper()
	dir := shortDir(t, "dra")
	r := &draRun{regPath: filepath.Join(dir, driver+"-reg.sock"), svcPath: filepath.Join(dir, "dra.sock"),
		logs: &logCapture{}, wipes: map[string][]time.Time{}}
	client := fake.NewClientset()
	client.PrependReactor("delete-collection", "resourceslices", r.recordWipe)
	r.pm = newDRAManager(t, client, wipingDelay, r.logs)
	r.startSentinel(t)
	r.rec = &recorder{upstream: r.pm}
	var h pluginwatcher.Handler = r.rec
	if policy {
		h = DRA(r.rec)
	}
	startDRAWatcher(t, dir, h, r.logs)
	r.info = &registerapi.PluginInfo{Type: pluginwatcher.DRAPlugin, Name: driver, Endpoint: r.svcPath, SupportedVersions: []string{"v1.DRAPlugin"}}
	r.serve(t)
	// Until the DRA manager's connection to the service is up, the driver
	// counts as gone since its registration.
	r.logs.wait(t, -1, draConnectionChanged, "driverName", driver, "connected", true)
	return r
}

// draConnectionChanged is what upstream's DRA plugin manager logs when its
// connection to a plugin's service comes up or goes
// (monitoredPlugin.HandleConn).
const draConnectionChanged = "Connection changed"

// startSentinel serves the sentinel driver's service and registers it
// with the DRA manager, connected.
func (r *draRun) startSentinel(t *testing.T) {
	t.Helper()
	path := filepath.Join(shortDir(t, "drs"), "dra.sock")
	r.sentinelLis, r.sentinelSrv = serveGRPC(t, path)
	go func() { _ = r.sentinelSrv.Serve(r.sentinelLis) }()
	if err := r.pm.RegisterPlugin(t.Context(), sentinel, path, []string{"v1.DRAPlugin"}, nil); err != nil {
		t.Fatal(err)
	}
	r.logs.wait(t, -1, draConnectionChanged, "driverName", sentinel, "connected", true)
}

// graceOver returns once the grace period of every connection loss and
// de-registration so far has passed: it kills the sentinel driver's
// service and waits for the DRA manager to wipe the sentinel's
// ResourceSlices, a grace period later. A wipe of the driver under test
// that was due by then (its timer started before the sentinel's) has been
// made by then.
func (r *draRun) graceOver(t *testing.T) {
	t.Helper()
	kill(r.sentinelLis, r.sentinelSrv)
	eventually(t, "the sentinel driver's ResourceSlices wiped", func() bool { return len(r.wipesOf(sentinel)) > 0 })
}

// keptRefusing waits until the watcher has found the registration socket
// refusing connections staleAttempts times over at least staleGrace and
// kept it registered: the default policy would have removed it as stale
// by then.
func (r *draRun) keptRefusing(t *testing.T) {
	t.Helper()
	eventually(t, "the registration socket refused and kept past the stale-socket rule", func() bool {
		kept := r.logs.all(-1, "Registered plugin socket refused connection, kept", "path", r.regPath)
		return len(kept) >= staleAttempts && kept[len(kept)-1].at.Sub(kept[0].at) >= staleGrace
	})
}

// deregistered waits until the watcher de-registered the plugin.
func (r *draRun) deregistered(t *testing.T) {
	t.Helper()
	eventually(t, "the plugin de-registered", func() bool { return len(r.rec.ops("deregister")) > 0 })
}

// recordWipe records a deletion of one driver's ResourceSlices (not the
// DRA manager's wipe of all of them at start).
func (r *draRun) recordWipe(a clienttesting.Action) (bool, runtime.Object, error) {
	sel := a.(clienttesting.DeleteCollectionAction).GetListRestrictions().Fields
	if d, ok := sel.RequiresExactMatch(resourceapi.ResourceSliceSelectorDriver); ok {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.wipes[d] = append(r.wipes[d], time.Now())
	}
	return true, nil, nil
}

// wipesOf returns when the ResourceSlices of driver d were wiped.
func (r *draRun) wipesOf(d string) []time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.wipes[d])
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
// period later, at the same paths, as a restarted container does: it
// removes its old sockets first, unless the watcher removed one as stale
// meanwhile (the service's, which is not registered).
func (r *draRun) restart(t *testing.T) {
	r.killBoth(t)
	time.Sleep(wipingDelay / 5)
	for _, p := range []string{r.regPath, r.svcPath} {
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			t.Fatal(err)
		}
	}
	r.serve(t)
}

func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}
