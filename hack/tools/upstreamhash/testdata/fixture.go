// Package fixture is the input of upstreamhash's tests: a few declarations
// of each kind the tool hashes.
package fixture

import "strings"

const (
	defaultName = "ext4"
	otherName   = "xfs"
)

var registry = map[string]int{}

// Handler has an unexported field that someone reads by reflection.
type Handler struct {
	plugin *plugin
}

type plugin struct{ name string }

type Set[T comparable] map[T]struct{}

// Join joins parts.
func Join(parts []string, sep string) string {
	if len(parts) == 0 {
		return ""
	}
	return strings.Join(parts, sep)
}

// Init sets the handler's plugin.
func (p *plugin) Init(h *Handler) error {
	h.plugin = p
	return nil
}

func (h Handler) Name() string { return h.plugin.name }

func (s Set[T]) Has(v T) bool {
	_, ok := s[v]
	return ok
}
