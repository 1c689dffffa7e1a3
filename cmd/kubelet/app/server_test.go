package app

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
	upstream "k8s.io/kubernetes/cmd/kubelet/app"
)

func helpText(t *testing.T, run func(out *bytes.Buffer) error) string {
	t.Helper()
	var out bytes.Buffer
	if err := run(&out); err != nil {
		t.Fatalf("--help: %v", err)
	}
	return out.String()
}

// TestFlagsMatchUpstream: every upstream kubelet flag is ours unchanged
// (name, type, default, usage), and ours add only --experimental-* flags,
// in a section of their own.
func TestFlagsMatchUpstream(t *testing.T) {
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
	ourFlags, nodeplugFlags, ok := strings.Cut(ourSections, "\nnodeplug flags:\n")
	if !ok {
		t.Fatalf("our help has no nodeplug section:\n%s", ours)
	}
	if ourFlags != theirFlags {
		t.Errorf("upstream flag section differs from upstream's kubelet")
	}
	c, err := newCommand()
	if err != nil {
		t.Fatal(err)
	}
	c.nodeplugFlags.VisitAll(func(f *pflag.Flag) {
		if !strings.HasPrefix(f.Name, "experimental-") {
			t.Errorf("nodeplug flag --%s is not named --experimental-*", f.Name)
		}
		if c.upstreamFlags.Lookup(f.Name) != nil {
			t.Errorf("nodeplug flag --%s shadows an upstream flag", f.Name)
		}
		if !strings.Contains(nodeplugFlags, "--"+f.Name) {
			t.Errorf("--%s missing from the nodeplug help section", f.Name)
		}
	})
}

func TestCommandErrors(t *testing.T) {
	const listsOurs = "nodeplug's flags are"
	cases := map[string]struct {
		args []string
		want string
		// notWant must not be in the error.
		notWant string
	}{
		"unknown nodeplug flag lists ours":   {args: []string{"--experimental-flex"}, want: listsOurs + ": --experimental-flex-call-timeout, --experimental-flex-init-timeout, --experimental-flexvolume-discovery"},
		"unknown nodeplug flag, underscores": {args: []string{"--experimental_flex"}, want: listsOurs + ": --experimental-flex-call-timeout, --experimental-flex-init-timeout, --experimental-flexvolume-discovery"},
		"malformed nodeplug flag":            {args: []string{"--experimental-flexvolume-discovery=maybe"}, want: `invalid argument "maybe"`, notWant: listsOurs},
		"unknown upstream flag":              {args: []string{"--no-such-flag"}, want: "unknown flag: --no-such-flag", notWant: listsOurs},
		"unknown flag naming experimental-":  {args: []string{"--not-experimental-flex"}, want: "unknown flag: --not-experimental-flex", notWant: listsOurs},
		"positional argument":                {args: []string{"run"}, want: `unknown command "run"`},
		"bad name policy":                    {args: []string{"--experimental-plugin-name-policy=Ignore"}, want: `"Ignore" is not one of Warn, Reject`},
		"bad mount namespace":                {args: []string{"--experimental-mount-namespace=a/b"}, want: `"a/b" is not a namespace name`},
		"missing config file":                {args: []string{"--config=/nonexistent/kubelet.yaml"}, want: "/nonexistent/kubelet.yaml"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c, err := newCommand()
			if err != nil {
				t.Fatal(err)
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

func TestNodeplugOptionsValidate(t *testing.T) {
	cases := map[string]struct {
		opts     NodeplugOptions
		wantErr  string
		alsoWant []string
	}{
		"defaults":                  {opts: *NewNodeplugOptions()},
		"own registration dir":      {opts: NodeplugOptions{PluginNamePolicy: "Reject", PluginRegistrationDir: "/var/lib/kubelet/nodeplug_registry"}},
		"upstream's registry dir":   {opts: NodeplugOptions{PluginNamePolicy: "Warn", PluginRegistrationDir: "/var/lib/kubelet/plugins_registry/"}, wantErr: "upstream's plugin manager directory"},
		"parent of upstream's dir":  {opts: NodeplugOptions{PluginNamePolicy: "Warn", PluginRegistrationDir: "/var/lib/kubelet"}, wantErr: "upstream's plugin manager directory"},
		"inside upstream's dir":     {opts: NodeplugOptions{PluginNamePolicy: "Warn", PluginRegistrationDir: "/var/lib/kubelet/plugins_registry/x"}, wantErr: "upstream's plugin manager directory"},
		"sibling with same prefix":  {opts: NodeplugOptions{PluginNamePolicy: "Warn", PluginRegistrationDir: "/var/lib/kubelet/plugins_registry_nodeplug"}},
		"relative registration dir": {opts: NodeplugOptions{PluginNamePolicy: "Warn", PluginRegistrationDir: "registry"}, wantErr: "not an absolute path"},
		"empty policy":              {opts: NodeplugOptions{}, wantErr: "not one of Warn, Reject"},
		"mount namespace":           {opts: NodeplugOptions{PluginNamePolicy: "Warn", MountNamespace: "kube-mount"}},
		"bad mount namespace":       {opts: NodeplugOptions{PluginNamePolicy: "Warn", MountNamespace: "Kube_Mount"}, wantErr: "--experimental-mount-namespace"},
		"flex call timeout":         {opts: NodeplugOptions{PluginNamePolicy: "Warn", FlexCallTimeout: 10 * time.Minute}},
		"negative flex call timeout": {opts: NodeplugOptions{PluginNamePolicy: "Warn", FlexCallTimeout: -time.Second},
			wantErr: "--experimental-flex-call-timeout"},
		"negative init timeout": {opts: NodeplugOptions{PluginNamePolicy: "Warn", FlexInitTimeout: -time.Second},
			wantErr: "--experimental-flex-init-timeout"},
		"negative exec timeout": {opts: NodeplugOptions{PluginNamePolicy: "Warn", MountPodExecTimeout: -time.Second},
			wantErr: "--experimental-mount-pod-exec-timeout"},
		"every problem is reported": {opts: NodeplugOptions{MountPodExecTimeout: -time.Second, FlexCallTimeout: -time.Second,
			PluginRegistrationDir: "registry"},
			wantErr: "--experimental-mount-pod-exec-timeout", alsoWant: []string{
				"--experimental-flex-call-timeout", "not one of Warn, Reject", "not an absolute path"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			err := tc.opts.Validate("/var/lib/kubelet")
			for _, want := range tc.alsoWant {
				if err == nil || !strings.Contains(err.Error(), want) {
					t.Errorf("error %v, want it to name %q too", err, want)
				}
			}
			if tc.wantErr == "" && err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			if tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Fatalf("error %v, want %q", err, tc.wantErr)
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
