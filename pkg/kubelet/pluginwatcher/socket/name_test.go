package socket

import "testing"

func TestCarriesName(t *testing.T) {
	for name, tc := range map[string]struct {
		rel, plugin string
		want        bool
	}{
		"bare name":                    {"foo", "foo", true},
		"name.sock":                    {"foo.sock", "foo", true},
		"design timestamp":             {"hostpath.csi.k8s.io.1700000000", "hostpath.csi.k8s.io", true},
		"node-driver-registrar":        {"hostpath.csi.k8s.io-reg.sock", "hostpath.csi.k8s.io", true},
		"DRA rolling update":           {"gpu.example.com-6f1c-reg.sock", "gpu.example.com", true},
		"underscore suffix":            {"foo_1.sock", "foo", true},
		"nested directory, base name":  {"csi/foo-reg.sock", "foo", true},
		"resource name escaped":        {"example.com_gpu.17.sock", "example.com/gpu", true},
		"resource name as directories": {"example.com/gpu.17.sock", "example.com/gpu", true},
		"longer name is not a match":   {"foobar.sock", "foo", false},
		"different name":               {"dp.1700000000", "example.com/resource", false},
		"empty plugin name":            {"foo.sock", "", false},
		"name only in directory":       {"foo/bar.sock", "foo", false},
	} {
		t.Run(name, func(t *testing.T) {
			if got := CarriesName(tc.rel, tc.plugin); got != tc.want {
				t.Errorf("CarriesName(%q, %q) = %v, want %v", tc.rel, tc.plugin, got, tc.want)
			}
		})
	}
}

func TestCheckIdentity(t *testing.T) {
	for name, tc := range map[string]struct {
		policy      IdentityPolicy
		rel, plugin string
		wantWarn    bool
		wantErr     bool
	}{
		"match":                {IdentityReject, "a.sock", "a", false, false},
		"mismatch rejected":    {IdentityReject, "b.sock", "a", false, true},
		"mismatch warned":      {IdentityWarn, "b.sock", "a", true, true},
		"empty name rejected":  {IdentityWarn, "b.sock", "", false, true},
		"empty name, policy R": {IdentityReject, "b.sock", "", false, true},
	} {
		t.Run(name, func(t *testing.T) {
			warn, err := CheckIdentity(tc.policy, Claim{Path: "/plugins/" + tc.rel, Rel: tc.rel, Type: "CSIPlugin", Name: tc.plugin})
			if warn != tc.wantWarn || (err != nil) != tc.wantErr {
				t.Errorf("CheckIdentity = (%v, %v), want warn=%v err=%v", warn, err, tc.wantWarn, tc.wantErr)
			}
		})
	}
}
