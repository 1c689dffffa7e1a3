package app

import (
	"strings"
	"testing"

	"github.com/spf13/pflag"
	upstream "k8s.io/kubernetes/cmd/kube-controller-manager/app"
)

// TestFlagsMatchUpstream: every upstream flag is ours with the same type,
// default and usage; ours add only --experimental-* flags.
func TestFlagsMatchUpstream(t *testing.T) {
	theirs := upstream.NewControllerManagerCommand().Flags()
	ours := NewControllerManagerCommand().Flags()
	theirs.VisitAll(func(f *pflag.Flag) {
		o := ours.Lookup(f.Name)
		switch {
		case o == nil:
			t.Errorf("upstream flag --%s is missing", f.Name)
		case o.Usage != f.Usage || o.DefValue != f.DefValue || o.Value.Type() != f.Value.Type() || o.Shorthand != f.Shorthand:
			t.Errorf("flag --%s differs from upstream's", f.Name)
		}
	})
	ours.VisitAll(func(f *pflag.Flag) {
		if theirs.Lookup(f.Name) == nil && !strings.HasPrefix(f.Name, "experimental-") {
			t.Errorf("extra flag --%s is not named --experimental-*", f.Name)
		}
	})
}

func TestNodeplugOptionsValidate(t *testing.T) {
	const flexDir = "/usr/libexec/kubernetes/kubelet-plugins/volume/exec"
	cases := map[string]struct {
		opts            NodeplugOptions
		leaderMigration bool
		wantErr         bool
	}{
		"off":                                       {},
		"off with leader migration":                 {leaderMigration: true},
		"flex discovery":                            {opts: NodeplugOptions{FlexVolumeDiscovery: true}},
		"flex with leader migration":                {opts: NodeplugOptions{FlexVolumeDiscovery: true}, leaderMigration: true, wantErr: true},
		"mount namespace":                           {opts: NodeplugOptions{MountNamespace: "kube-mount", MountPodDriverDir: "/tmp/x"}},
		"bad mount namespace":                       {opts: NodeplugOptions{MountNamespace: "Kube_Mount", MountPodDriverDir: "/tmp/x"}, wantErr: true},
		"relative pod driver dir":                   {opts: NodeplugOptions{MountNamespace: "kube-mount", MountPodDriverDir: "x"}, wantErr: true},
		"mount namespace, migration":                {opts: NodeplugOptions{MountNamespace: "kube-mount", MountPodDriverDir: "/tmp/x"}, leaderMigration: true, wantErr: true},
		"pod driver dir is /":                       {opts: NodeplugOptions{MountNamespace: "kube-mount", MountPodDriverDir: "/"}, wantErr: true},
		"pod driver dir is /tmp":                    {opts: NodeplugOptions{MountNamespace: "kube-mount", MountPodDriverDir: "/tmp/"}, wantErr: true},
		"pod driver dir is the flex plugin dir":     {opts: NodeplugOptions{MountNamespace: "kube-mount", MountPodDriverDir: flexDir}, wantErr: true},
		"pod driver dir inside the flex plugin dir": {opts: NodeplugOptions{MountNamespace: "kube-mount", MountPodDriverDir: flexDir + "/pods"}, wantErr: true},
		"pod driver dir holds the flex plugin dir":  {opts: NodeplugOptions{MountNamespace: "kube-mount", MountPodDriverDir: "/usr/libexec/kubernetes"}, wantErr: true},
		"negative flex call timeout":                {opts: NodeplugOptions{FlexVolumeDiscovery: true, FlexCallTimeout: -1}, wantErr: true},
		"negative flex init timeout":                {opts: NodeplugOptions{FlexVolumeDiscovery: true, FlexInitTimeout: -1}, wantErr: true},
		"default pod driver dir":                    {opts: NodeplugOptions{MountNamespace: "kube-mount", MountPodDriverDir: NewNodeplugOptions().MountPodDriverDir}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			errs := tc.opts.Validate(tc.leaderMigration, flexDir)
			if (len(errs) > 0) != tc.wantErr {
				t.Fatalf("errors %v, want error: %v", errs, tc.wantErr)
			}
		})
	}
}

func TestUnknownNodeplugFlag(t *testing.T) {
	cmd := NewControllerManagerCommand()
	cmd.SetArgs([]string{"--experimental-no-such-thing"})
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	err := cmd.Execute()
	if err == nil || !strings.Contains(err.Error(), "unknown flag: --experimental-no-such-thing") {
		t.Fatalf("error %v, want unknown flag", err)
	}
}
