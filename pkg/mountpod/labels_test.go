package mountpod

import (
	"errors"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"
)

func TestLabelKey(t *testing.T) {
	cases := map[string]struct {
		plugin, want, wantErr string
	}{
		"in-tree local":        {plugin: "kubernetes.io/local-volume", want: "mount.kubernetes.io/local-volume"},
		"in-tree nfs":          {plugin: "kubernetes.io/nfs", want: "mount.kubernetes.io/nfs"},
		"flex vendor/driver":   {plugin: "nodeplug.io/fuse", want: "flexvolume.mount.kubernetes.io/nodeplug.io_2ffuse"},
		"flex no vendor":       {plugin: "lvm", want: "flexvolume.mount.kubernetes.io/lvm"},
		"upstream flex prefix": {plugin: "flexvolume-k8s/dummy", want: "flexvolume.mount.kubernetes.io/k8s_2fdummy"},
		"flex underscore":      {plugin: "acme.com/my_drv", want: "flexvolume.mount.kubernetes.io/acme.com_2fmy_5fdrv"},
		"flex trailing dot":    {plugin: "x.", want: "flexvolume.mount.kubernetes.io/x_2e"},
		"flex leading dot":     {plugin: ".x", wantErr: "must start with a letter or digit"},
		"flex too long":        {plugin: "a-very-long-vendor-name.example.com/" + strings.Repeat("d", 30), wantErr: "more than 63"},
		"empty flex":           {plugin: "flexvolume-", wantErr: "empty"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := LabelKey(tc.plugin)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("LabelKey(%q) = %q, %v; want error containing %q", tc.plugin, got, err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("LabelKey(%q) = %q, %v; want %q", tc.plugin, got, err, tc.want)
			}
			if errs := validation.IsQualifiedName(got); len(errs) > 0 {
				t.Fatalf("%q is not a valid label key: %v", got, errs)
			}
		})
	}
}

// TestFlexRoundTrip: every driver name that fits encodes to a valid key
// that decodes back to the same name.
func TestFlexRoundTrip(t *testing.T) {
	names := []string{"a", "nodeplug.io/fuse", "k8s/dummy-attachable", "x_y", "A.B-C", "trail.", "trail-", "odd~name", "nü"}
	for _, n := range names {
		key, err := FlexLabelKey(n)
		if err != nil {
			t.Fatalf("%q: %v", n, err)
		}
		if errs := validation.IsQualifiedName(key); len(errs) > 0 {
			t.Fatalf("%q -> %q invalid: %v", n, key, errs)
		}
		back, flex, err := ParseLabelKey(key)
		if err != nil || !flex || back != n {
			t.Fatalf("%q -> %q -> %q (flex %v, err %v)", n, key, back, flex, err)
		}
	}
}

func FuzzFlexRoundTrip(f *testing.F) {
	f.Add("nodeplug.io/fuse")
	f.Fuzz(func(t *testing.T, n string) {
		key, err := FlexLabelKey(n)
		if err != nil {
			return
		}
		if errs := validation.IsQualifiedName(key); len(errs) > 0 {
			t.Fatalf("%q -> %q invalid: %v", n, key, errs)
		}
		if back, _, err := ParseLabelKey(key); err != nil || back != n {
			t.Fatalf("%q -> %q -> %q, %v", n, key, back, err)
		}
	})
}

func TestParseLabelKey(t *testing.T) {
	cases := map[string]struct {
		key, want string
		flex      bool
		err       error
		errText   string
	}{
		"in-tree":         {key: "mount.kubernetes.io/local-volume", want: "kubernetes.io/local-volume"},
		"flex":            {key: "flexvolume.mount.kubernetes.io/nodeplug.io_2ffuse", want: "nodeplug.io/fuse", flex: true},
		"other label":     {key: "app", err: ErrNotMountLabel},
		"other prefix":    {key: "example.com/x", err: ErrNotMountLabel},
		"container annot": {key: "mount.kubernetes.io/container", err: ErrNotMountLabel},
		"bad escape":      {key: "flexvolume.mount.kubernetes.io/a_zz", flex: true, errText: "bad escape"},
		"upper escape":    {key: "flexvolume.mount.kubernetes.io/a_2F", flex: true, errText: "bad escape"},
		"truncated":       {key: "flexvolume.mount.kubernetes.io/a_2", flex: true, errText: "truncated"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, flex, err := ParseLabelKey(tc.key)
			switch {
			case tc.err != nil:
				if !errors.Is(err, tc.err) {
					t.Fatalf("err %v, want %v", err, tc.err)
				}
			case tc.errText != "":
				if err == nil || !strings.Contains(err.Error(), tc.errText) {
					t.Fatalf("err %v, want %q", err, tc.errText)
				}
			case err != nil || got != tc.want || flex != tc.flex:
				t.Fatalf("got %q flex=%v err=%v, want %q flex=%v", got, flex, err, tc.want, tc.flex)
			}
		})
	}
}
