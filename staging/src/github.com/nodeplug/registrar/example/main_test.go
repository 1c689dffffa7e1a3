package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestDefaultDirIsNodeplugs: the --dir default is a directory nodeplug's
// kubelet accepts for its watcher, i.e. neither upstream's plugin manager
// directory nor inside it, and it is the one the docs name.
func TestDefaultDirIsNodeplugs(t *testing.T) {
	const upstreamDir = "/var/lib/kubelet/plugins_registry"
	rel, err := filepath.Rel(upstreamDir, defaultDir)
	if err != nil {
		t.Fatal(err)
	}
	if rel == "." || !strings.HasPrefix(rel, "..") {
		t.Errorf("default --dir %s overlaps upstream's %s, which nodeplug's kubelet refuses", defaultDir, upstreamDir)
	}
	if want := "/var/lib/kubelet/plugins_registry_nodeplug"; defaultDir != want {
		t.Errorf("default --dir = %s, want %s as in docs/plugin-watcher.md", defaultDir, want)
	}
}
