package app

import (
	"context"
	"os"
	"path/filepath"
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
