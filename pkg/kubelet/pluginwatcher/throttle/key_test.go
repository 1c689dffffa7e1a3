package throttle

import "testing"

func TestThrottleKey(t *testing.T) {
	for name, tc := range map[string]struct{ rel, want string }{
		"timestamped socket":       {"flood.123.sock", "flood"},
		"timestamp without .sock":  {"dp.1700000000", "dp"},
		"dotted name":              {"hostpath.csi.k8s.io.42.sock", "hostpath.csi.k8s.io"},
		"registrar suffix kept":    {"hostpath.csi.k8s.io-reg.sock", "hostpath.csi.k8s.io-reg"},
		"digits after dash kept":   {"plugin-17.sock", "plugin-17"},
		"nested keeps directories": {"example.com/gpu.9.sock", "example.com/gpu"},
		"digit-only base kept":     {"sub/123.sock", "sub/123"},
	} {
		t.Run(name, func(t *testing.T) {
			if got := FileKey(tc.rel); got != tc.want {
				t.Errorf("FileKey(%q) = %q, want %q", tc.rel, got, tc.want)
			}
		})
	}
}
