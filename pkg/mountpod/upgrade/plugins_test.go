package upgrade

import (
	"slices"
	"testing"
)

// TestDecodeFlexLabel: the driver name a flex label's name stands for, or
// an error for a malformed one.
func TestDecodeFlexLabel(t *testing.T) {
	const bad = "<error>"
	cases := []struct{ name, escaped, want string }{
		{"slash", "nodeplug.io_2ffuse", "nodeplug.io/fuse"},
		{"plain", "plain", "plain"},
		{"slash and underscore", "example.com_2fa_5fb", "example.com/a_b"},
		{"final dot", "foo_2e", "foo."},
		{"percent", "a_25d", "a%d"},
		{"backslash", "a_5cx", `a\x`},
		{"leading slash", "_2fabs", "/abs"},
		{"UTF-8 bytes", "a_c3_a9", "aé"},
		{"one hex digit", "foo_2", bad},
		{"trailing underscore", "foo_", bad},
		{"not hex", "foo_zz", bad},
		{"upper-case hex", "foo_2F", bad},
		{"NUL", "foo_00", bad},
		{"underscore alone", "_", bad},
		{"empty name", "", bad},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, flex, errs := servedPlugins(map[string]string{"flexvolume.mount.kubernetes.io/" + tc.escaped: "true"})
			got := bad
			if len(errs) == 0 && len(flex) == 1 {
				got = flex[0]
			}
			if got != tc.want {
				t.Errorf("decode %q: got %q (errors %v), want %q", tc.escaped, got, errs, tc.want)
			}
		})
	}
}

// TestServedPlugins: the plugins a mount pod serves from all its labels.
func TestServedPlugins(t *testing.T) {
	cases := []struct {
		name         string
		labels       map[string]string
		intree, flex []string
		bad          int
	}{
		{
			name: "plugins from labels",
			labels: map[string]string{"app": "true", "mount.kubernetes.io/local-volume": "true",
				"flexvolume.mount.kubernetes.io/nodeplug.io_2ffuse": "true", "mount.kubernetes.io/container": "true",
				"flexvolume.mount.kubernetes.io/bad_zz": "true", "mount.kubernetes.io/": "true", "example.com/x": "true",
				"mount.kubernetes.io/nfs": "true"},
			intree: []string{"kubernetes.io/local-volume", "kubernetes.io/nfs"}, flex: []string{"nodeplug.io/fuse"}, bad: 1,
		},
		{
			name:   "a label not set to true serves nothing",
			labels: map[string]string{"mount.kubernetes.io/nfs": "false", "flexvolume.mount.kubernetes.io/a": "yes"},
		},
		{name: "no labels"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			intree, flex, bad := servedPlugins(tc.labels)
			if !slices.Equal(intree, tc.intree) || !slices.Equal(flex, tc.flex) || len(bad) != tc.bad {
				t.Errorf("got %v %v %v, want %v %v and %d bad", intree, flex, bad, tc.intree, tc.flex, tc.bad)
			}
		})
	}
}
