package chartrender

import (
	"testing"
	"time"
)

// TestReleaseClaimsOfDeletedNodesAfter: the class key reaches the master's
// configuration, and a class without it releases nothing.
func TestReleaseClaimsOfDeletedNodesAfter(t *testing.T) {
	r := render(t, testRelease, testNS, map[string]any{"classes": []any{
		map[string]any{"name": "a", "hostDir": "/mnt/a", "releaseClaimsOfDeletedNodesAfter": "10m"},
		map[string]any{"name": "b", "hostDir": "/mnt/b"},
	}})
	cfg := r.config("local-volume-provisioner-config")
	if d, on := cfg.StorageClassMap["a"].ReleasesClaimsOfDeletedNodes(); !on || d != 10*time.Minute {
		t.Errorf("class a: %v %v, want 10m", d, on)
	}
	if d, on := cfg.StorageClassMap["b"].ReleasesClaimsOfDeletedNodes(); on {
		t.Errorf("class b releases claims after %v", d)
	}
}
