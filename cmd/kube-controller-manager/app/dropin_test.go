package app

import (
	"bytes"
	"strings"
	"testing"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/util/sets"
	upstream "k8s.io/kubernetes/cmd/kube-controller-manager/app"

	"github.com/nodeplug/nodeplug/pkg/designs/designstest"
)

// designFlags are the flags each design adds to upstream's. The flexvolume
// driver timeouts come with either design.
var designFlags = designstest.Flags{
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
	extra := sets.New[string]()
	ours.VisitAll(func(f *pflag.Flag) {
		if theirs.Lookup(f.Name) == nil {
			extra.Insert(f.Name)
		}
	})
	designstest.CheckExtra(t, designFlags, compiled, noDesignsBuild, extra)
	var help bytes.Buffer
	cmd.SetOut(&help)
	if err := cmd.Help(); err != nil {
		t.Fatal(err)
	}
	if has := strings.Contains(help.String(), "\nNodeplug flags:\n"); has != (len(compiled) > 0) {
		t.Errorf("help has a Nodeplug flags section: %v, want one only with designs compiled in (%v)", has, compiled)
	}
}

// TestDesignFlags: each design's flags exist exactly when it is compiled
// in (the flex timeouts when either design is), and --version names the
// designs compiled in.
func TestDesignFlags(t *testing.T) {
	cmd := NewControllerManagerCommand()
	np := NewNodeplugOptions()
	designstest.CheckEachDesign(t, designFlags, np.Names(), func(f string) bool { return cmd.Flags().Lookup(f) != nil })
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
	designstest.CheckVersion(t, out.String(), np.VersionLine())
}
