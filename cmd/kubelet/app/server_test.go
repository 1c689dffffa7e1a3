package app

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestCommandErrors(t *testing.T) {
	// An unknown --experimental-* flag lists the flags of the designs
	// compiled in, or says there are none.
	listsOurs := "nodeplug's flags are: --experimental-"
	if len(NewNodeplugOptions().Names()) == 0 {
		listsOurs = "built without nodeplug's designs: nodeplug designs: none"
	}
	cases := map[string]struct {
		args []string
		// needs is the design the case needs compiled in, if any.
		needs string
		want  string
		// notWant must not be in the error.
		notWant string
	}{
		"unknown nodeplug flag lists ours":   {args: []string{"--experimental-flex"}, want: listsOurs},
		"unknown nodeplug flag, underscores": {args: []string{"--experimental_flex"}, want: listsOurs},
		"malformed nodeplug flag":            {args: []string{"--experimental-flexvolume-discovery=maybe"}, needs: "flexdiscovery", want: `invalid argument "maybe"`, notWant: listsOurs},
		"unknown upstream flag":              {args: []string{"--no-such-flag"}, want: "unknown flag: --no-such-flag", notWant: listsOurs},
		"unknown flag naming experimental-":  {args: []string{"--not-experimental-flex"}, want: "unknown flag: --not-experimental-flex", notWant: listsOurs},
		"positional argument":                {args: []string{"run"}, want: `unknown command "run"`},
		"bad name policy":                    {args: []string{"--experimental-plugin-name-policy=Ignore"}, needs: "pluginwatcher", want: `"Ignore" is not one of Warn, Reject`},
		"bad mount namespace":                {args: []string{"--experimental-mount-namespace=a/b"}, needs: "mountpods", want: `"a/b" is not a namespace name`},
		"missing config file":                {args: []string{"--config=/nonexistent/kubelet.yaml"}, want: "/nonexistent/kubelet.yaml"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c, err := newCommand()
			if err != nil {
				t.Fatal(err)
			}
			if tc.needs != "" && !slices.Contains(c.nodeplug.Names(), tc.needs) {
				t.Skipf("design %s is not compiled in", tc.needs)
			}
			cmd := NewKubeletCommand(context.Background())
			err = c.run(context.Background(), cmd, tc.args)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
			if tc.notWant != "" && strings.Contains(err.Error(), tc.notWant) {
				t.Fatalf("error %v contains %q", err, tc.notWant)
			}
		})
	}
}

func writeFile(t *testing.T, path, body string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}
