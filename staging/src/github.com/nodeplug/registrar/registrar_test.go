package registrar

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"
)

func shortDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("/tmp", "reg")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	return dir
}

// kubeletClient plays the kubelet's side of the registration protocol.
func kubeletClient(t *testing.T, path string) registerapi.RegistrationClient {
	t.Helper()
	cc, err := grpc.NewClient("passthrough:///"+path,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", path)
		}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cc.Close() })
	return registerapi.NewRegistrationClient(cc)
}

func TestRegistrarServesInfoAndStatus(t *testing.T) {
	dir := shortDir(t)
	statuses := make(chan Status, 1)
	r, err := New(Config{
		Dir: dir, Type: "DevicePlugin", Name: "example.com/gpu", Endpoint: "/run/gpu.sock",
		SupportedVersions: []string{"v1beta1"}, OnStatus: func(s Status) { statuses <- s },
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := r.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer r.Stop()
	if base := filepath.Base(r.SocketPath()); !strings.HasPrefix(base, "example.com_gpu.") {
		t.Errorf("socket %q does not carry the escaped plugin name", base)
	}

	c := kubeletClient(t, r.SocketPath())
	info, err := c.GetInfo(ctx, &registerapi.InfoRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if info.Type != "DevicePlugin" || info.Name != "example.com/gpu" || info.Endpoint != "/run/gpu.sock" || info.SupportedVersions[0] != "v1beta1" {
		t.Errorf("GetInfo = %+v", info)
	}
	if _, ok := r.Status(); ok {
		t.Error("status reported before the kubelet sent one")
	}
	if _, err := c.NotifyRegistrationStatus(ctx, &registerapi.RegistrationStatus{Error: "no common version"}); err != nil {
		t.Fatalf("a refusal must be acknowledged, got %v", err)
	}
	if s := <-statuses; s.Registered || s.Error != "no common version" {
		t.Errorf("OnStatus got %+v", s)
	}
	if s, err := r.WaitForStatus(ctx); err != nil || s.Registered {
		t.Errorf("WaitForStatus = %+v, %v", s, err)
	}
}

// TestRegistrarSocketAppearsListening: once Start returns the socket is in
// place and accepts connections; no temporary file is left behind.
func TestRegistrarSocketAppearsListening(t *testing.T) {
	dir := shortDir(t)
	r, err := New(Config{Dir: dir, Type: "CSIPlugin", Name: "hostpath.csi.k8s.io", SupportedVersions: []string{"1.0.0"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	conn, err := net.Dial("unix", r.SocketPath())
	if err != nil {
		t.Fatalf("socket does not accept connections: %v", err)
	}
	_ = conn.Close()
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("directory holds %d entries, want only the socket", len(entries))
	}
	r.Stop()
	if _, err := os.Lstat(r.SocketPath()); !os.IsNotExist(err) {
		t.Errorf("Stop left the socket behind: %v", err)
	}
}

func TestRegistrarStopsWithContext(t *testing.T) {
	dir := shortDir(t)
	r, err := New(Config{Dir: dir, Type: "CSIPlugin", Name: "a", SupportedVersions: []string{"1.0.0"}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	if err := r.Start(ctx); err != nil {
		t.Fatal(err)
	}
	cancel()
	deadline := time.Now().Add(5 * time.Second)
	for {
		if _, err := os.Lstat(r.SocketPath()); os.IsNotExist(err) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("socket not removed after the context ended")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestRegistrarExistingFile(t *testing.T) {
	for name, tc := range map[string]struct {
		prepare func(path string) error
		wantErr string
	}{
		"stale socket is replaced": {func(p string) error {
			l, err := net.ListenUnix("unix", &net.UnixAddr{Name: p, Net: "unix"})
			if err != nil {
				return err
			}
			l.SetUnlinkOnClose(false)
			return l.Close()
		}, ""},
		"regular file is an error": {func(p string) error { return os.WriteFile(p, nil, 0o600) }, "not a socket"},
	} {
		t.Run(name, func(t *testing.T) {
			dir := shortDir(t)
			r, err := New(Config{Dir: dir, Type: "CSIPlugin", Name: "x", SocketName: "x-reg.sock", SupportedVersions: []string{"1.0.0"}})
			if err != nil {
				t.Fatal(err)
			}
			if err := tc.prepare(r.SocketPath()); err != nil {
				t.Fatal(err)
			}
			err = r.Start(context.Background())
			defer r.Stop()
			if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Errorf("Start = %v, want error containing %q", err, tc.wantErr)
			}
		})
	}
}

func TestNewBadInput(t *testing.T) {
	valid := Config{Dir: "/tmp/x", Type: "CSIPlugin", Name: "n", SupportedVersions: []string{"1.0.0"}}
	for name, tc := range map[string]struct {
		mutate  func(*Config)
		wantErr string
	}{
		"relative dir":           {func(c *Config) { c.Dir = "plugins" }, "absolute"},
		"missing type":           {func(c *Config) { c.Type = "" }, "type is required"},
		"missing name":           {func(c *Config) { c.Name = "" }, "name is required"},
		"no versions":            {func(c *Config) { c.SupportedVersions = nil }, "supported version"},
		"socket name with slash": {func(c *Config) { c.SocketName = "a/b.sock" }, "plain file name"},
		"hidden socket name":     {func(c *Config) { c.SocketName = ".n.sock" }, "plain file name"},
		"path too long":          {func(c *Config) { c.Dir = "/" + strings.Repeat("d", 120) }, "unix limit"},
	} {
		t.Run(name, func(t *testing.T) {
			cfg := valid
			tc.mutate(&cfg)
			if _, err := New(cfg); err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("New = %v, want error containing %q", err, tc.wantErr)
			}
		})
	}
}

func TestSocketName(t *testing.T) {
	at := time.Unix(0, 1700000000123456789)
	for name, tc := range map[string]struct{ plugin, want string }{
		"csi driver":      {"hostpath.csi.k8s.io", "hostpath.csi.k8s.io.1700000000123456789.sock"},
		"resource name":   {"example.com/gpu", "example.com_gpu.1700000000123456789.sock"},
		"nodeplug plugin": {"mount-utils", "mount-utils.1700000000123456789.sock"},
	} {
		t.Run(name, func(t *testing.T) {
			if got := SocketName(tc.plugin, at); got != tc.want {
				t.Errorf("SocketName = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestEscapeName(t *testing.T) {
	for name, tc := range map[string]struct{ plugin, want string }{
		"no slash":      {"hostpath.csi.k8s.io", "hostpath.csi.k8s.io"},
		"resource name": {"example.com/gpu", "example.com_gpu"},
		"two slashes":   {"a/b/c", "a_b_c"},
		"empty":         {"", ""},
	} {
		t.Run(name, func(t *testing.T) {
			if got := EscapeName(tc.plugin); got != tc.want {
				t.Errorf("EscapeName(%q) = %q, want %q", tc.plugin, got, tc.want)
			}
		})
	}
}
