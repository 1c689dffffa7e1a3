package socket

import (
	"fmt"
	"path"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
)

const (
	// nodeplugDir is nodeplug's conventional registration directory, 9
	// bytes longer than upstream's.
	nodeplugDir = "/var/lib/kubelet/plugins_registry_nodeplug"
	upstreamDir = "/var/lib/kubelet/plugins_registry"
	podUID      = types.UID("6f1c2a5e-0000-4000-8000-000000000001")
)

// driverName returns a DRA driver name of n bytes: labels of at most 63
// bytes under example.com.
func driverName(n int) string {
	const domain = ".example.com"
	var b strings.Builder
	for b.Len() < n-len(domain) {
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(strings.Repeat("d", min(63, n-len(domain)-b.Len())))
	}
	return b.String() + domain
}

// TestCheckIdentityDRAHelperNames: every rolling-update socket name that
// upstream's DRA helper (RollingUpdateRegistrarSocketFile, called here)
// picks passes the Reject policy, in nodeplug's directory and in
// upstream's, on both sides of each length at which it switches form: the
// full pod UID up to 19 bytes of driver name in nodeplug's directory (28
// in upstream's), the hashed UID up to 44 (53), then dra-<hash>-reg.sock.
func TestCheckIdentityDRAHelperNames(t *testing.T) {
	for _, tc := range []struct {
		dir      string
		nameLen  int
		wantForm string
	}{
		{nodeplugDir, 15, "uid"}, {nodeplugDir, 19, "uid"}, {nodeplugDir, 20, "hash"},
		{nodeplugDir, 44, "hash"}, {nodeplugDir, 45, "fallback"}, {nodeplugDir, 63, "fallback"}, {nodeplugDir, 200, "fallback"},
		{upstreamDir, 28, "uid"}, {upstreamDir, 29, "hash"}, {upstreamDir, 53, "hash"}, {upstreamDir, 54, "fallback"},
	} {
		driver := driverName(tc.nameLen)
		base := kubeletplugin.RollingUpdateRegistrarSocketFile(tc.dir, driver, podUID)
		t.Run(fmt.Sprintf("%d-byte name in %s", tc.nameLen, tc.dir), func(t *testing.T) {
			form := "fallback"
			switch {
			case strings.HasPrefix(base, driver+"-"+string(podUID)):
				form = "uid"
			case strings.HasPrefix(base, driver+"-"):
				form = "hash"
			}
			if form != tc.wantForm {
				t.Fatalf("the helper picked the %s form for a %d-byte name in %s, want %s", form, tc.nameLen, tc.dir, tc.wantForm)
			}
			c := Claim{Path: path.Join(tc.dir, base), Rel: base, Type: "DRAPlugin", Name: driver}
			if _, err := CheckIdentity(IdentityReject, c); err != nil {
				t.Errorf("CheckIdentity(Reject) refused the helper's own name: %v", err)
			}
		})
	}
}

// TestCheckIdentityRefusesOtherNames: a socket that claims a name it does
// not carry is still refused, DRA fallback names included when the driver
// name is short enough for a named form or the type is not DRAPlugin.
func TestCheckIdentityRefusesOtherNames(t *testing.T) {
	fallback := func(dir, driver string) string {
		return path.Join(dir, kubeletplugin.RollingUpdateRegistrarSocketFile(dir, driver, podUID))
	}
	long, short := driverName(45), driverName(44)
	for name, c := range map[string]Claim{
		"another driver's full-UID name":  {Path: nodeplugDir + "/other.example.com-" + string(podUID) + "-reg.sock", Type: "DRAPlugin", Name: "gpu.example.com"},
		"another driver's hashed name":    {Path: nodeplugDir + "/other.example.com-AAAAAAAAAAA-reg.sock", Type: "DRAPlugin", Name: "gpu.example.com"},
		"fallback name for a short name":  {Path: fallback(nodeplugDir, long), Type: "DRAPlugin", Name: short},
		"fallback name, not a DRA plugin": {Path: fallback(nodeplugDir, long), Type: "CSIPlugin", Name: long},
		"fallback form, short hash":       {Path: nodeplugDir + "/dra-AAAAAAAAAAAAAAAAAAAAA-reg.sock", Type: "DRAPlugin", Name: long},
		"fallback form, not base64url":    {Path: nodeplugDir + "/dra-AAAAAAAAAAAAAAAAAAAA+A-reg.sock", Type: "DRAPlugin", Name: long},
		"fallback form, other suffix":     {Path: nodeplugDir + "/dra-AAAAAAAAAAAAAAAAAAAAAA.sock", Type: "DRAPlugin", Name: long},
	} {
		t.Run(name, func(t *testing.T) {
			c.Rel = path.Base(c.Path)
			if _, err := CheckIdentity(IdentityReject, c); err == nil {
				t.Errorf("CheckIdentity(Reject, %+v) accepted it", c)
			}
		})
	}
}
