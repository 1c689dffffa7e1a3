package discovery

import (
	"testing"

	"github.com/nodeplug/nodeplug/pkg/localpv/identity"
	"github.com/nodeplug/nodeplug/pkg/localpv/report"
)

// TestCollidingDisks reads sysfs trees of disks whose older identities
// collided (review N1): NVMe namespaces of one controller, GCE local SSDs
// with the placeholder serial nvme_card, array LUNs with one WWN, a cloned
// VM disk, zero serials. Namespaces are told apart by their namespace,
// LUNs by their serial with the WWN; placeholder and zero serials are weak;
// what still collides (one serial on two disks) is left for the master,
// which publishes neither.
func TestCollidingDisks(t *testing.T) {
	s := &Scanner{SysDir: "testdata/colliding"}
	id := func(name string) identity.ID { return s.diskIdentity(&report.Disk{Name: name}) }
	for _, tc := range []struct {
		name     string
		a, b     string
		distinct bool
		strong   bool
		wantA    identity.ID
	}{
		{name: "namespaces of one controller with namespace UUIDs", a: "nvme0n1", b: "nvme0n2", distinct: true, strong: true,
			wantA: identity.NVMe("QEMU NVMe Ctrl", "deadbeef", 1<<30, identity.NVMeNamespace{NSID: "1", UUID: "4f1c9a3e-5b6d-4c7e-8f90-a1b2c3d4e5f6",
				Address: "0000:00:03.0"})},
		{name: "namespaces of one controller by the kernel's nvme. wwid", a: "nvme1n1", b: "nvme1n2", distinct: true, strong: true,
			wantA: identity.NVMe("QEMU NVMe Ctrl", "12340001", 1<<30, identity.NVMeNamespace{NSID: "1"})},
		{name: "GCE local SSDs on two controllers", a: "nvme2n1", b: "nvme3n1", distinct: true, strong: false,
			wantA: identity.NVMe("nvme_card", "nvme_card", 786432000*512, identity.NVMeNamespace{NSID: "1", Address: "0000:00:04.0"})},
		{name: "GCE local SSDs as namespaces of one controller", a: "nvme4n1", b: "nvme4n2", distinct: true, strong: false},
		{name: "array LUNs with one WWN", a: "sdb", b: "sdc", distinct: true, strong: true,
			wantA: identity.WWNSerial("naa.600a098038303053453f463045727a6f", "SN0001")},
		{name: "a cloned VM disk", a: "vdb", b: "vdc", distinct: false, strong: true},
		{name: "zero serials", a: "sdd", b: "sde", distinct: false, strong: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, b := id(tc.a), id(tc.b)
			if a == "" || b == "" {
				t.Fatalf("no identity: %q, %q", a, b)
			}
			if tc.wantA != "" && a != tc.wantA {
				t.Errorf("%s: %q, want %q", tc.a, a, tc.wantA)
			}
			if (a != b) != tc.distinct {
				t.Errorf("%s and %s: %q and %q, distinct %v", tc.a, tc.b, a, b, tc.distinct)
			}
			if tc.distinct && identity.Compare(a, b) != identity.Different {
				t.Errorf("%q and %q compare %v", a, b, identity.Compare(a, b))
			}
			if a.Strong() != tc.strong {
				t.Errorf("%q strong %v, want %v", a, a.Strong(), tc.strong)
			}
			for _, id := range []identity.ID{a, b} {
				if err := id.Valid(); err != nil {
					t.Error(err)
				}
			}
		})
	}
}
