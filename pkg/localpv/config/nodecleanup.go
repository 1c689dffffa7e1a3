package config

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// MinReleaseClaimsDelay is the shortest releaseClaimsOfDeletedNodesAfter a
// class accepts. A Node object deleted by hand and re-registered by its
// kubelet, or a node pool that deletes and re-creates a Node under its
// name, comes back within seconds; a shorter delay would delete the claims
// of nodes that are not gone.
const MinReleaseClaimsDelay = time.Minute

// Duration is a time span written as a Go duration string ("10m", "1h30m");
// the number 0 is accepted as zero.
type Duration struct {
	time.Duration
}

// UnmarshalJSON reads a duration string, or the number 0.
func (d *Duration) UnmarshalJSON(b []byte) error {
	if bytes.Equal(bytes.TrimSpace(b), []byte("0")) {
		d.Duration = 0
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("a duration must be a string such as \"10m\" or \"1h\", not %s", b)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("a duration must be a string such as \"10m\" or \"1h\": %w", err)
	}
	d.Duration = v
	return nil
}

// MarshalJSON writes the duration as a Go duration string.
func (d Duration) MarshalJSON() ([]byte, error) {
	return json.Marshal(d.Duration.String())
}

// ReleasesClaimsOfDeletedNodes reports whether the class releases the bound
// claims of its PVs on a deleted Node, and after how long.
func (m MountConfig) ReleasesClaimsOfDeletedNodes() (time.Duration, bool) {
	d := m.ReleaseClaimsOfDeletedNodesAfter.Duration
	return d, d > 0
}

// ReleasesClaimsOfDeletedNodes reports whether any class releases the bound
// claims of deleted nodes.
func (c *Configuration) ReleasesClaimsOfDeletedNodes() bool {
	for _, mc := range c.StorageClassMap {
		if _, ok := mc.ReleasesClaimsOfDeletedNodes(); ok {
			return true
		}
	}
	return false
}

func validateReleaseClaims(m MountConfig, p *field.Path) field.ErrorList {
	d := m.ReleaseClaimsOfDeletedNodesAfter.Duration
	switch {
	case d < 0:
		return field.ErrorList{field.Invalid(p.Child("releaseClaimsOfDeletedNodesAfter"), d.String(),
			"must not be negative; 0 or no value turns the release of claims on deleted nodes off")}
	case d > 0 && d < MinReleaseClaimsDelay:
		return field.ErrorList{field.Invalid(p.Child("releaseClaimsOfDeletedNodesAfter"), d.String(),
			fmt.Sprintf("must be at least %s, so that a Node that re-registers at once keeps its claims; 0 or no value turns it off",
				MinReleaseClaimsDelay))}
	}
	return nil
}
