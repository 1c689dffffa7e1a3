package app

import (
	"bytes"
	"context"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/component-base/version"
	upstream "k8s.io/kubernetes/cmd/kubelet/app"

	"github.com/nodeplug/nodeplug/pkg/designs/designstest"
)

// designFlags are the flags each design adds to upstream's. The flexvolume
// driver timeouts come with either design that runs flex drivers.
var designFlags = designstest.Flags{
	"flexdiscovery": {"experimental-flexvolume-discovery", "experimental-flex-call-timeout", "experimental-flex-init-timeout"},
	"pluginwatcher": {"experimental-plugin-registration-dir", "experimental-plugin-name-policy"},
	"mountpods":     {"experimental-mount-namespace", "experimental-mount-pod-exec-timeout", "experimental-flex-call-timeout", "experimental-flex-init-timeout"},
	"localpvcheck":  {"experimental-local-volume-identity-check"},
}

// TestDropInFlagSet: the kubelet accepts upstream's flags unchanged (the
// same names, types, defaults and usage as upstream's NewKubeletCommand,
// compared through --help, which prints all four) plus exactly the
// --experimental-* flags of the designs compiled in, in a section of their
// own. Built with every nodeplug_no_* tag (noDesignsBuild), it must accept
// exactly upstream's flags and have no nodeplug section.
func TestDropInFlagSet(t *testing.T) {
	ctx := context.Background()
	theirs := helpText(t, func(out *bytes.Buffer) error {
		cmd := upstream.NewKubeletCommand(ctx)
		cmd.SetOut(out)
		cmd.SetArgs([]string{"--help"})
		return cmd.Execute()
	})
	ours := helpText(t, func(out *bytes.Buffer) error {
		cmd := NewKubeletCommand(ctx)
		cmd.SetOut(out)
		cmd.SetArgs([]string{"--help"})
		return cmd.Execute()
	})
	_, theirFlags, ok := strings.Cut(theirs, "\nFlags:\n")
	if !ok {
		t.Fatalf("upstream help has no Flags section:\n%s", theirs)
	}
	_, ourSections, ok := strings.Cut(ours, "\nFlags:\n")
	if !ok {
		t.Fatalf("our help has no Flags section:\n%s", ours)
	}
	ourFlags, nodeplugSection, hasSection := strings.Cut(ourSections, "\nnodeplug flags:\n")
	if ourFlags != theirFlags {
		t.Errorf("upstream flag section differs from upstream's kubelet")
	}
	c, err := newCommand()
	if err != nil {
		t.Fatal(err)
	}
	compiled := c.nodeplug.Names()
	var all []string
	c.all.VisitAll(func(f *pflag.Flag) { all = append(all, f.Name) })
	designstest.CheckExtra(t, designFlags, compiled, noDesignsBuild, sets.New(all...).Difference(helpFlagNames(theirFlags)))
	if missing := helpFlagNames(theirFlags).Difference(sets.New(all...)); missing.Len() > 0 {
		t.Errorf("upstream flags not accepted: %v", sets.List(missing))
	}
	want := designFlags.Of(compiled)
	if hasSection != (want.Len() > 0) {
		t.Errorf("help has a nodeplug flags section: %v, want one only with designs compiled in (%v)", hasSection, compiled)
	}
	for _, name := range sets.List(want) {
		if !strings.Contains(nodeplugSection, "--"+name+" ") {
			t.Errorf("--%s missing from the nodeplug help section", name)
		}
	}
}

// TestDesignFlags: each design's flags exist exactly when it is compiled
// in (the flex timeouts when either flex design is), and --version names
// the designs compiled in.
func TestDesignFlags(t *testing.T) {
	c, err := newCommand()
	if err != nil {
		t.Fatal(err)
	}
	designstest.CheckEachDesign(t, designFlags, c.nodeplug.Names(), func(f string) bool { return c.all.Lookup(f) != nil })
	var out, errOut bytes.Buffer
	cmd := NewKubeletCommand(context.Background())
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	cmd.SetArgs([]string{"--version"})
	// --version is upstream's global flag: set it back for later tests.
	t.Cleanup(func() {
		if err := c.all.Set("version", "false"); err != nil {
			t.Error(err)
		}
	})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	designstest.CheckVersion(t, errOut.String(), c.nodeplug.VersionLine())
	// kubeadm's preflight (KubeletVersion) reads `kubelet --version`'s
	// standard output and accepts upstream's line alone: nodeplug's lines
	// go to standard error (make kubeadm-up runs kubeadm's own check).
	if want := "Kubernetes " + version.Get().GitVersion + "\n"; out.String() != want {
		t.Errorf("--version printed %q on standard output; want upstream's line alone, %q", out.String(), want)
	}
}

// helpFlagNames returns the long names of the flags in a FlagUsages text.
// Flag lines start with "  -x, --" or six spaces and "--"; wrapped usage
// lines are indented further.
func helpFlagNames(usage string) sets.Set[string] {
	names := sets.New[string]()
	for _, m := range helpFlagLine.FindAllStringSubmatch(usage, -1) {
		names.Insert(m[1])
	}
	return names
}

var helpFlagLine = regexp.MustCompile(`(?m)^(?:  -[[:alnum:]], |      )--([[:alnum:]][[:alnum:]._-]*)`)

func helpText(t *testing.T, run func(out *bytes.Buffer) error) string {
	t.Helper()
	var out bytes.Buffer
	if err := run(&out); err != nil {
		t.Fatalf("--help: %v", err)
	}
	return out.String()
}
