package app

import (
	"slices"
	"strings"
	"testing"
)

func TestNodeplugOptionsValidate(t *testing.T) {
	cases := map[string]struct {
		args []string
		// needs are the designs the case needs compiled in.
		needs    []string
		wantErr  string
		alsoWant []string
	}{
		"defaults":                    {},
		"own registration dir":        {args: []string{"--experimental-plugin-name-policy=Reject", "--experimental-plugin-registration-dir=/var/lib/kubelet/nodeplug_registry"}, needs: []string{"pluginwatcher"}},
		"upstream's registry dir":     {args: []string{"--experimental-plugin-registration-dir=/var/lib/kubelet/plugins_registry/"}, needs: []string{"pluginwatcher"}, wantErr: "upstream's plugin manager directory"},
		"parent of upstream's dir":    {args: []string{"--experimental-plugin-registration-dir=/var/lib/kubelet"}, needs: []string{"pluginwatcher"}, wantErr: "upstream's plugin manager directory"},
		"inside upstream's dir":       {args: []string{"--experimental-plugin-registration-dir=/var/lib/kubelet/plugins_registry/x"}, needs: []string{"pluginwatcher"}, wantErr: "upstream's plugin manager directory"},
		"sibling with same prefix":    {args: []string{"--experimental-plugin-registration-dir=/var/lib/kubelet/plugins_registry_nodeplug"}, needs: []string{"pluginwatcher"}},
		"relative registration dir":   {args: []string{"--experimental-plugin-registration-dir=registry"}, needs: []string{"pluginwatcher"}, wantErr: "not an absolute path"},
		"empty policy":                {args: []string{"--experimental-plugin-name-policy="}, needs: []string{"pluginwatcher"}, wantErr: "not one of Warn, Reject"},
		"mount namespace":             {args: []string{"--experimental-mount-namespace=kube-mount"}, needs: []string{"mountpods"}},
		"bad mount namespace":         {args: []string{"--experimental-mount-namespace=Kube_Mount"}, needs: []string{"mountpods"}, wantErr: "--experimental-mount-namespace"},
		"flex call timeout":           {args: []string{"--experimental-flex-call-timeout=10m"}, needs: []string{"flexdiscovery"}},
		"negative flex call timeout":  {args: []string{"--experimental-flex-call-timeout=-1s"}, needs: []string{"flexdiscovery"}, wantErr: "--experimental-flex-call-timeout"},
		"negative init timeout":       {args: []string{"--experimental-flex-init-timeout=-1s"}, needs: []string{"mountpods"}, wantErr: "--experimental-flex-init-timeout"},
		"negative exec timeout":       {args: []string{"--experimental-mount-pod-exec-timeout=-1s"}, needs: []string{"mountpods"}, wantErr: "--experimental-mount-pod-exec-timeout"},
		"local volume identity check": {args: []string{"--experimental-local-volume-identity-check"}, needs: []string{"localpvcheck"}},
		"identity check with mount pods": {args: []string{"--experimental-local-volume-identity-check", "--experimental-mount-namespace=kube-mount"},
			needs: []string{"localpvcheck", "mountpods"}},
		"every problem is reported": {
			args:    []string{"--experimental-mount-pod-exec-timeout=-1s", "--experimental-flex-call-timeout=-1s", "--experimental-plugin-name-policy=", "--experimental-plugin-registration-dir=registry"},
			needs:   []string{"mountpods", "pluginwatcher"},
			wantErr: "--experimental-mount-pod-exec-timeout", alsoWant: []string{"--experimental-flex-call-timeout", "not one of Warn, Reject", "not an absolute path"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			o := parsed(t, tc.needs, tc.args)
			err := o.Validate("/var/lib/kubelet")
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

// TestEnabled: each design's switch turns nodeplug on, and only the
// designs it names are listed as enabled.
func TestEnabled(t *testing.T) {
	cases := map[string]struct {
		args  []string
		needs string
		want  []string
	}{
		"nothing set":                     {},
		"timeouts alone switch no design": {args: []string{"--experimental-flex-call-timeout=1m"}, needs: "flexdiscovery"},
		"flex discovery":                  {args: []string{"--experimental-flexvolume-discovery"}, needs: "flexdiscovery", want: []string{"flexdiscovery"}},
		"plugin watcher":                  {args: []string{"--experimental-plugin-registration-dir=/r"}, needs: "pluginwatcher", want: []string{"pluginwatcher"}},
		"mount pods":                      {args: []string{"--experimental-mount-namespace=kube-mount"}, needs: "mountpods", want: []string{"mountpods"}},
		"local volume identity check":     {args: []string{"--experimental-local-volume-identity-check"}, needs: "localpvcheck", want: []string{"localpvcheck"}},
		"identity check switched off":     {args: []string{"--experimental-local-volume-identity-check=false"}, needs: "localpvcheck"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			o := parsed(t, []string{tc.needs}, tc.args)
			if got := o.EnabledNames(); !slices.Equal(got, tc.want) || o.Enabled() != (len(tc.want) > 0) {
				t.Errorf("enabled %v (Enabled() = %v), want %v", got, o.Enabled(), tc.want)
			}
		})
	}
}

// parsed returns the options set from args, or skips t when a design of
// needs is not compiled in.
func parsed(t *testing.T, needs, args []string) *NodeplugOptions {
	t.Helper()
	o := NewNodeplugOptions()
	for _, d := range needs {
		if d != "" && !slices.Contains(o.Names(), d) {
			t.Skipf("design %s is not compiled in", d)
		}
	}
	if err := o.NamedFlagSet().Parse(args); err != nil {
		t.Fatal(err)
	}
	return o
}
