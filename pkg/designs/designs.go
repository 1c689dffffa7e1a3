// Package designs is the list of nodeplug designs compiled into a binary
// (cmd/kubelet, cmd/kube-controller-manager). A design's files in
// cmd/<binary>/app are built unless its tag nodeplug_no_<name> is given,
// and a stub built with the tag returns no design; the binary's start-up
// asks the list for flags, validation and start hooks, never a design.
package designs

import (
	"slices"
	"strings"

	"github.com/spf13/pflag"
)

// Design is one design compiled in. S is the start hook's type, which
// each binary defines.
type Design[S any] struct {
	// Name is how --version and NODEPLUG_DESIGNS call the design; empty
	// for a part that designs share, which is not listed.
	Name string
	// AddFlags registers the design's --experimental-* flags.
	AddFlags func(fs *pflag.FlagSet)
	// Validate checks the flags' values against arg, a setting of the
	// binary that the binary names (the kubelet's --root-dir, ...).
	Validate func(arg string) []error
	// Enabled reports whether the flags switch the design on.
	Enabled func() bool
	// Start is the design's start hook; nil when a shared part does the
	// work.
	Start S
}

// List is the designs compiled in, in the order their start hooks run.
type List[S any] struct {
	designs []*Design[S]
}

// NewList returns the list of the designs that are not nil.
func NewList[S any](ds ...*Design[S]) *List[S] {
	return &List[S]{designs: slices.DeleteFunc(ds, func(d *Design[S]) bool { return d == nil })}
}

// Names returns the names of the designs compiled in.
func (l *List[S]) Names() []string { return names(l.designs) }

// EnabledNames returns the names of the designs switched on.
func (l *List[S]) EnabledNames() []string {
	return names(slices.DeleteFunc(slices.Clone(l.designs), func(d *Design[S]) bool { return !d.Enabled() }))
}

// VersionLine is the line --version adds: "nodeplug designs: " and the
// designs compiled in, separated by commas, or none.
func (l *List[S]) VersionLine() string {
	if n := l.Names(); len(n) > 0 {
		return "nodeplug designs: " + strings.Join(n, ",")
	}
	return "nodeplug designs: none"
}

// HasFlags reports whether a design is compiled in, that is whether the
// binary has flags of nodeplug's.
func (l *List[S]) HasFlags() bool { return len(l.designs) > 0 }

// AddFlags registers every design's flags on fs.
func (l *List[S]) AddFlags(fs *pflag.FlagSet) {
	for _, d := range l.designs {
		d.AddFlags(fs)
	}
}

// Validate returns every design's problems with its flags.
func (l *List[S]) Validate(arg string) []error {
	var errs []error
	for _, d := range l.designs {
		errs = append(errs, d.Validate(arg)...)
	}
	return errs
}

// Enabled reports whether any design is switched on.
func (l *List[S]) Enabled() bool {
	return slices.ContainsFunc(l.designs, func(d *Design[S]) bool { return d.Enabled() })
}

// Starts returns the start hooks of the designs switched on, in order.
// Each design's Enabled is asked once, here.
func (l *List[S]) Starts() []S {
	var starts []S
	for _, d := range l.designs {
		if d.Enabled() {
			starts = append(starts, d.Start)
		}
	}
	return starts
}

func names[S any](ds []*Design[S]) []string {
	var out []string
	for _, d := range ds {
		if d.Name != "" {
			out = append(out, d.Name)
		}
	}
	return out
}

// Switches say whether the designs that share a part (such as nodeplug's
// flexvolume prober) are on; the part is on when one is.
type Switches []func() bool

// Add adds a design's switch.
func (s *Switches) Add(on func() bool) { *s = append(*s, on) }

// Any reports whether a design that shares the part is on.
func (s Switches) Any() bool {
	return slices.ContainsFunc(s, func(on func() bool) bool { return on() })
}

// Switch returns a design that is one boolean flag and whose work a part
// shared with other designs does: the flag is added to the part's
// switches.
func Switch[S any](name, flag, usage string, part *Switches) *Design[S] {
	on := false
	part.Add(func() bool { return on })
	return &Design[S]{
		Name:     name,
		AddFlags: func(fs *pflag.FlagSet) { fs.BoolVar(&on, flag, on, usage) },
		Validate: func(string) []error { return nil },
		Enabled:  func() bool { return on },
	}
}

// Part returns a part that designs share: it has flags and a start hook
// but no name, and it is on when one of the designs in users is.
func Part[S any](addFlags func(fs *pflag.FlagSet), validate func() []error, users *Switches, start S) *Design[S] {
	return &Design[S]{
		AddFlags: addFlags,
		Validate: func(string) []error { return validate() },
		Enabled:  users.Any,
		Start:    start,
	}
}
