package driver

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"k8s.io/klog/v2/ktesting"
)

// testDriver is a driver serving on a real unix socket in a short
// temporary directory, and a gRPC client connected to it.
type testDriver struct {
	cfg  Config
	conn *grpc.ClientConn
	ctrl csi.ControllerClient
	node csi.NodeClient
	id   csi.IdentityClient
}

// startDriver runs a driver in a new temporary directory (short, so the
// socket path stays under the unix limit) until the test ends. edit, if
// set, changes the configuration first.
func startDriver(t *testing.T, edit func(*Config)) *testDriver {
	t.Helper()
	dir, err := os.MkdirTemp("", "csihp")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	cfg := Config{
		Name: "hostpath.csi.nodeplug.io", NodeID: "node-1", VendorVersion: "test",
		DataDir: filepath.Join(dir, "data"), KubeletDir: filepath.Join(dir, "kubelet"),
		Endpoint: filepath.Join(dir, "kubelet", "plugins", "hp", "csi.sock"),
	}
	if edit != nil {
		edit(&cfg)
	}
	d, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	waitForSocket(t, cfg.Endpoint, done)
	conn, err := grpc.NewClient("unix://"+cfg.Endpoint, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return &testDriver{cfg: cfg, conn: conn, ctrl: csi.NewControllerClient(conn), node: csi.NewNodeClient(conn), id: csi.NewIdentityClient(conn)}
}

func waitForSocket(t *testing.T, path string, done <-chan error) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if fi, err := os.Stat(path); err == nil && fi.Mode()&os.ModeSocket != 0 {
			return
		}
		select {
		case err := <-done:
			t.Fatalf("driver stopped before serving: %v", err)
		case <-time.After(10 * time.Millisecond):
		}
	}
	t.Fatalf("no socket at %s after 10 s", path)
}

func ctxFor(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// wantCode fails unless err carries the gRPC code want (codes.OK: no error).
func wantCode(t *testing.T, err error, want codes.Code) {
	t.Helper()
	if got := status.Code(err); got != want {
		t.Fatalf("got %v (%v), want code %v", got, err, want)
	}
}

func mountCap(mode csi.VolumeCapability_AccessMode_Mode) *csi.VolumeCapability {
	return &csi.VolumeCapability{
		AccessType: &csi.VolumeCapability_Mount{Mount: &csi.VolumeCapability_MountVolume{}},
		AccessMode: &csi.VolumeCapability_AccessMode{Mode: mode},
	}
}

var rwo = mountCap(csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER)
