package app

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/util/sets"
	upstream "k8s.io/kubernetes/cmd/kube-controller-manager/app"
)

// designFlags are the flags each design adds to upstream's. The flexvolume
// driver timeouts come with either design.
var designFlags = map[string][]string{
	"flexdiscovery": {"experimental-flexvolume-discovery", "experimental-flex-call-timeout", "experimental-flex-init-timeout"},
	"mountpods":     {"experimental-mount-namespace", "experimental-mount-pod-driver-dir", "experimental-flex-call-timeout", "experimental-flex-init-timeout"},
}

// TestDropInFlagSet: every flag of upstream's NewControllerManagerCommand
// is ours with the same type, default, usage and shorthand, and ours add
// exactly the --experimental-* flags of the designs compiled in, in a
// "Nodeplug flags" section of --help. Built with every nodeplug_no_* tag
// (noDesignsBuild), the flag sets must be equal and the section absent.
func TestDropInFlagSet(t *testing.T) {
	theirs := upstream.NewControllerManagerCommand().Flags()
	cmd := NewControllerManagerCommand()
	ours := cmd.Flags()
	theirs.VisitAll(func(f *pflag.Flag) {
		o := ours.Lookup(f.Name)
		switch {
		case o == nil:
			t.Errorf("upstream flag --%s is missing", f.Name)
		case o.Usage != f.Usage || o.DefValue != f.DefValue || o.Value.Type() != f.Value.Type() || o.Shorthand != f.Shorthand ||
			o.Hidden != f.Hidden || o.Deprecated != f.Deprecated:
			t.Errorf("flag --%s differs from upstream's", f.Name)
		}
	})
	compiled := NewNodeplugOptions().Names()
	if noDesignsBuild && len(compiled) > 0 {
		t.Errorf("built with every nodeplug_no_* tag, but designs %v are compiled in", compiled)
	}
	want := sets.New[string]()
	for _, d := range compiled {
		want.Insert(designFlags[d]...)
	}
	extra := sets.New[string]()
	ours.VisitAll(func(f *pflag.Flag) {
		if theirs.Lookup(f.Name) == nil {
			extra.Insert(f.Name)
		}
	})
	if !extra.Equal(want) {
		t.Errorf("flags beyond upstream's: %v, want those of designs %v: %v", sets.List(extra), compiled, sets.List(want))
	}
	var help bytes.Buffer
	cmd.SetOut(&help)
	if err := cmd.Help(); err != nil {
		t.Fatal(err)
	}
	if has := strings.Contains(help.String(), "\nNodeplug flags:\n"); has != (want.Len() > 0) {
		t.Errorf("help has a Nodeplug flags section: %v, want one only with designs compiled in (%v)", has, compiled)
	}
}

// TestDesignFlags: each design's flags exist exactly when it is compiled
// in (the flex timeouts when either design is), and --version names the
// designs compiled in.
func TestDesignFlags(t *testing.T) {
	cmd := NewControllerManagerCommand()
	compiled := NewNodeplugOptions().Names()
	for _, name := range []string{"flexdiscovery", "mountpods"} {
		t.Run(name, func(t *testing.T) {
			in := slices.Contains(compiled, name)
			for _, f := range designFlags[name] {
				shared := !in && slices.ContainsFunc(compiled, func(d string) bool { return slices.Contains(designFlags[d], f) })
				if got := cmd.Flags().Lookup(f) != nil; got != in && !shared {
					t.Errorf("--%s accepted: %v, want %v (design compiled in: %v)", f, got, in, in)
				}
			}
		})
	}
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetArgs([]string{"--version"})
	// --version is upstream's global flag: set it back for later tests.
	t.Cleanup(func() {
		if err := cmd.Flags().Set("version", "false"); err != nil {
			t.Error(err)
		}
	})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	wantLine := "nodeplug designs: none"
	if len(compiled) > 0 {
		wantLine = "nodeplug designs: " + strings.Join(compiled, ",")
	}
	if !strings.HasSuffix(out.String(), "\n"+wantLine+"\n") || !strings.Contains(out.String(), "nodeplug v") {
		t.Errorf("--version printed %q, want nodeplug's version and %q", out.String(), wantLine)
	}
}
