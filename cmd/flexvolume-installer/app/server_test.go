package app

import (
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func writeSource(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "src")
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// entries lists a directory, hidden names included.
func entries(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}

func TestRunWaitsAndRemovesOnExit(t *testing.T) {
	dir := t.TempDir()
	opts := NewOptions()
	opts.PluginDir = dir
	opts.RemoveOnExit = true
	opts.Drivers = []string{
		"example.com/one=" + writeSource(t, "1"),
		"example.com/two=" + writeSource(t, "2"),
	}
	if err := opts.Validate(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- Run(ctx, opts) }()
	deadline := time.Now().Add(10 * time.Second)
	for len(entries(t, dir)) < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("drivers not installed: %v", entries(t, dir))
		}
		time.Sleep(10 * time.Millisecond)
	}
	select {
	case err := <-done:
		t.Fatalf("Run returned before the signal: %v", err)
	default:
	}
	cancel() // SIGTERM
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got := entries(t, dir); len(got) != 0 {
		t.Errorf("left after exit: %v", got)
	}
}

// get returns the status code and body of a GET on url.
func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestHealthEndpoints runs the installer on a real port: /readyz turns 200
// once the drivers are in place and 503, naming the driver, once one is
// removed from under it; /healthz stays 200.
func TestHealthEndpoints(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	dir := t.TempDir()
	opts := NewOptions()
	opts.PluginDir, opts.HealthAddress = dir, addr
	opts.Drivers = []string{"example.com/one=" + writeSource(t, "1")}
	if err := opts.Validate(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- Run(ctx, opts) }()
	base := "http://" + addr
	deadline := time.Now().Add(10 * time.Second)
	for {
		code, _ := getOrZero(base + "/readyz")
		if code == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/readyz not 200 after install: %d", code)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := os.Remove(filepath.Join(dir, "example.com~one", "one")); err != nil {
		t.Fatal(err)
	}
	if code, body := get(t, base+"/readyz"); code != http.StatusServiceUnavailable || !strings.Contains(body, "example.com/one") {
		t.Errorf("/readyz after removal: %d %q", code, body)
	}
	if code, _ := get(t, base+"/healthz"); code != http.StatusOK {
		t.Errorf("/healthz: %d", code)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// getOrZero is get for a server that may not listen yet: 0 on an error.
func getOrZero(url string) (int, error) {
	resp, err := http.Get(url)
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}

func TestReadinessBeforeInstall(t *testing.T) {
	r := &readiness{}
	if err := r.check(); err == nil || !strings.Contains(err.Error(), "not installed yet") {
		t.Errorf("check before install: %v", err)
	}
	r.set(nil)
	if err := r.check(); err != nil {
		t.Errorf("check with no drivers after install: %v", err)
	}
}
