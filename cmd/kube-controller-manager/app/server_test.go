package app

import (
	"slices"
	"strings"
	"testing"

	"github.com/spf13/pflag"
	cliflag "k8s.io/component-base/cli/flag"
)

func TestNodeplugOptionsValidate(t *testing.T) {
	const flexDir = "/usr/libexec/kubernetes/kubelet-plugins/volume/exec"
	mount := func(dir string) []string {
		return []string{"--experimental-mount-namespace=kube-mount", "--experimental-mount-pod-driver-dir=" + dir}
	}
	cases := map[string]struct {
		args []string
		// needs is the design the case needs compiled in, if any.
		needs           string
		leaderMigration bool
		wantErr         bool
	}{
		"off":                                       {},
		"off with leader migration":                 {leaderMigration: true},
		"flex discovery":                            {args: []string{"--experimental-flexvolume-discovery"}, needs: "flexdiscovery"},
		"flex with leader migration":                {args: []string{"--experimental-flexvolume-discovery"}, needs: "flexdiscovery", leaderMigration: true, wantErr: true},
		"mount namespace":                           {args: mount("/tmp/x"), needs: "mountpods"},
		"bad mount namespace":                       {args: []string{"--experimental-mount-namespace=Kube_Mount"}, needs: "mountpods", wantErr: true},
		"relative pod driver dir":                   {args: mount("x"), needs: "mountpods", wantErr: true},
		"mount namespace, migration":                {args: mount("/tmp/x"), needs: "mountpods", leaderMigration: true, wantErr: true},
		"pod driver dir is /":                       {args: mount("/"), needs: "mountpods", wantErr: true},
		"pod driver dir is /tmp":                    {args: mount("/tmp/"), needs: "mountpods", wantErr: true},
		"pod driver dir is the flex plugin dir":     {args: mount(flexDir), needs: "mountpods", wantErr: true},
		"pod driver dir inside the flex plugin dir": {args: mount(flexDir + "/pods"), needs: "mountpods", wantErr: true},
		"pod driver dir holds the flex plugin dir":  {args: mount("/usr/libexec/kubernetes"), needs: "mountpods", wantErr: true},
		"pod driver dir without mount pods":         {args: []string{"--experimental-mount-pod-driver-dir=/"}, needs: "mountpods"},
		"negative flex call timeout":                {args: []string{"--experimental-flexvolume-discovery", "--experimental-flex-call-timeout=-1s"}, needs: "flexdiscovery", wantErr: true},
		"negative flex init timeout":                {args: []string{"--experimental-flex-init-timeout=-1s"}, needs: "mountpods", wantErr: true},
		"default pod driver dir":                    {args: []string{"--experimental-mount-namespace=kube-mount"}, needs: "mountpods"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			o := parsed(t, tc.needs, tc.args)
			errs := o.Validate(tc.leaderMigration, flexDir)
			if (len(errs) > 0) != tc.wantErr {
				t.Fatalf("errors %v, want error: %v", errs, tc.wantErr)
			}
		})
	}
}

// TestVolumeHooks: a design switched on gives the volume controllers
// nodeplug's prober and the attach/detach pod replay; none switched on
// leaves them upstream's.
func TestVolumeHooks(t *testing.T) {
	cases := map[string]struct {
		args      []string
		needs     string
		wantHooks bool
	}{
		"nothing set":                     {},
		"timeouts alone switch no design": {args: []string{"--experimental-flex-call-timeout=1m"}, needs: "flexdiscovery"},
		"flex discovery":                  {args: []string{"--experimental-flexvolume-discovery"}, needs: "flexdiscovery", wantHooks: true},
		"mount pods":                      {args: []string{"--experimental-mount-namespace=kube-mount"}, needs: "mountpods", wantHooks: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			o := parsed(t, tc.needs, tc.args)
			h := o.VolumeHooks()
			if o.Enabled() != tc.wantHooks || (h.Prober != nil) != tc.wantHooks || (h.AttachDetachPods != nil) != tc.wantHooks {
				t.Errorf("Enabled() = %v, prober hook %v, attach/detach pods hook %v; want all %v",
					o.Enabled(), h.Prober != nil, h.AttachDetachPods != nil, tc.wantHooks)
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

// parsed returns the options set from args, or skips t when the design
// needs (if any) is not compiled in.
func parsed(t *testing.T, needs string, args []string) *NodeplugOptions {
	t.Helper()
	o := NewNodeplugOptions()
	if needs != "" && !slices.Contains(o.Names(), needs) {
		t.Skipf("design %s is not compiled in", needs)
	}
	fs := pflag.NewFlagSet("nodeplug", pflag.ContinueOnError)
	fs.SetNormalizeFunc(cliflag.WordSepNormalizeFunc)
	o.AddFlags(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	return o
}
