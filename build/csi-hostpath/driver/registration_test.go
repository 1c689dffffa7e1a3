package driver

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"
)

// TestRegistration plays the kubelet's plugin watcher: it finds the
// registration socket, reads the plugin's info and tells it the verdict.
func TestRegistration(t *testing.T) {
	var regDir string
	d := startDriver(t, func(c *Config) {
		regDir = filepath.Join(filepath.Dir(c.DataDir), "registry")
		c.RegistrationDir = regDir
	})
	sock := filepath.Join(regDir, "hostpath.csi.nodeplug.io-reg.sock")
	waitForSocket(t, sock, nil)
	conn, err := grpc.NewClient("unix://"+sock, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	c := registerapi.NewRegistrationClient(conn)
	info, err := c.GetInfo(ctxFor(t), &registerapi.InfoRequest{})
	if err != nil {
		t.Fatalf("GetInfo: %v", err)
	}
	if info.GetType() != "CSIPlugin" || info.GetName() != d.cfg.Name || info.GetEndpoint() != d.cfg.Endpoint ||
		len(info.GetSupportedVersions()) != 1 || info.GetSupportedVersions()[0] != "1.0.0" {
		t.Fatalf("GetInfo = %v, want a CSIPlugin %s at %s speaking 1.0.0", info, d.cfg.Name, d.cfg.Endpoint)
	}
	if _, err := c.NotifyRegistrationStatus(ctxFor(t), &registerapi.RegistrationStatus{PluginRegistered: true}); err != nil {
		t.Fatalf("NotifyRegistrationStatus: %v", err)
	}
	entries, err := os.ReadDir(regDir)
	if err != nil || len(entries) != 1 {
		t.Fatalf("registration dir holds %v (%v), want the one socket", entries, err)
	}
}

// TestStopDeregisters: when the driver stops, both sockets are gone, which
// de-registers it.
func TestStopDeregisters(t *testing.T) {
	dir, err := os.MkdirTemp("", "csihp")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	cfg := Config{Name: "hostpath.csi.nodeplug.io", NodeID: "n", DataDir: dir + "/data", KubeletDir: dir + "/k",
		Endpoint: dir + "/k/csi.sock", RegistrationDir: dir + "/reg"}
	d, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	waitForSocket(t, dir+"/reg/hostpath.csi.nodeplug.io-reg.sock", done)
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return 10 s after its context ended")
	}
	for _, p := range []string{cfg.Endpoint, dir + "/reg/hostpath.csi.nodeplug.io-reg.sock"} {
		if _, err := os.Lstat(p); !os.IsNotExist(err) {
			t.Errorf("%s is left after the driver stopped: %v", p, err)
		}
	}
}
