// Package designstest holds the checks that cmd/kubelet/app and
// cmd/kube-controller-manager/app tests make of the designs compiled into
// their command, whatever nodeplug_no_* tags the test is built with.
package designstest

import (
	"maps"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/sets"
)

// Flags maps each design a binary can have to the flags it adds. A flag
// of a part that designs share is listed under each of them.
type Flags map[string][]string

// Of returns the flags of the designs compiled.
func (f Flags) Of(compiled []string) sets.Set[string] {
	want := sets.New[string]()
	for _, d := range compiled {
		want.Insert(f[d]...)
	}
	return want
}

// CheckExtra fails t unless extra, the flags a command has beyond
// upstream's, are exactly those of the designs compiled, and fails it if
// noDesigns (the test is built with every nodeplug_no_* tag) but a design
// is compiled in.
func CheckExtra(t *testing.T, f Flags, compiled []string, noDesigns bool, extra sets.Set[string]) {
	t.Helper()
	if noDesigns && len(compiled) > 0 {
		t.Errorf("built with every nodeplug_no_* tag, but designs %v are compiled in", compiled)
	}
	if want := f.Of(compiled); !extra.Equal(want) {
		t.Errorf("flags beyond upstream's: %v, want those of designs %v: %v", sets.List(extra), compiled, sets.List(want))
	}
}

// CheckEachDesign runs a subtest per design of f: its flags are accepted
// exactly when it is compiled in, but for flags of a part it shares with a
// design that is.
func CheckEachDesign(t *testing.T, f Flags, compiled []string, accepted func(flag string) bool) {
	t.Helper()
	for _, name := range slices.Sorted(maps.Keys(f)) {
		t.Run(name, func(t *testing.T) {
			in := slices.Contains(compiled, name)
			for _, flag := range f[name] {
				if got := accepted(flag); got != in && !f.Of(compiled).Has(flag) {
					t.Errorf("--%s accepted: %v, want %v (design compiled in: %v)", flag, got, in, in)
				}
			}
		})
	}
}

// CheckVersion fails t unless out, what --version printed, has nodeplug's
// version and ends with the designs line.
func CheckVersion(t *testing.T, out, line string) {
	t.Helper()
	if !strings.HasSuffix(out, "\n"+line+"\n") || !strings.Contains(out, "nodeplug v") {
		t.Errorf("--version printed %q, want nodeplug's version and %q", out, line)
	}
}
