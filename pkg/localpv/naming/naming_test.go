package naming

import (
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"
)

func TestNamesAreDeterministicAndValid(t *testing.T) {
	long := strings.Repeat("n", 253)
	for _, name := range []string{
		PVName("node-a", "/mnt/disks/vol1"),
		PVName(long, "/mnt/"+strings.Repeat("p", 4000)),
		DiscoveryJobName(long),
		CleanupJobName(VolumeID(long, "/x"), 123456),
	} {
		if errs := validation.IsDNS1123Label(name); len(errs) > 0 {
			t.Errorf("%q is not a DNS label: %v", name, errs)
		}
	}
	if a, b := PVName("a", "/p"), PVName("a", "/p"); a != b {
		t.Fatalf("PVName is not deterministic: %q, then %q", a, b)
	}
	if got := len(VolumeID("a", "/p")) * 4; got < 64 {
		t.Fatalf("volume ID has %d bits, want >= 64", got)
	}
}

func TestFieldsAreSeparated(t *testing.T) {
	tests := []struct {
		name string
		a, b [2]string
	}{
		{name: "shifted boundary", a: [2]string{"ab", "/c"}, b: [2]string{"a", "b/c"}},
		{name: "different node", a: [2]string{"node-1", "/mnt/v"}, b: [2]string{"node-2", "/mnt/v"}},
		{name: "different path", a: [2]string{"n", "/mnt/v1"}, b: [2]string{"n", "/mnt/v2"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if VolumeID(tc.a[0], tc.a[1]) == VolumeID(tc.b[0], tc.b[1]) {
				t.Fatalf("IDs collide for %v and %v", tc.a, tc.b)
			}
		})
	}
	if NodeID("x") == VolumeID("x", "") {
		t.Fatal("node and volume IDs must use different domains")
	}
}

func TestNoCollisionsInLargeSet(t *testing.T) {
	seen := make(map[string]struct{}, 100000)
	for n := range 1000 {
		for v := range 100 {
			id := VolumeID("node-"+strconv.Itoa(n), "/mnt/disks/vol"+strconv.Itoa(v))
			if _, dup := seen[id]; dup {
				t.Fatalf("collision at node %d volume %d", n, v)
			}
			seen[id] = struct{}{}
		}
	}
}

func BenchmarkPVName(b *testing.B) {
	for b.Loop() {
		_ = PVName("node-123.example.internal", "/mnt/disks/nvme-0123456789abcdef")
	}
}

// BenchmarkFNV32Name measures the 32-bit FNV-1a naming the upstream static
// provisioner uses (hash of file, node and class without separators), for
// comparison with PVName.
func BenchmarkFNV32Name(b *testing.B) {
	for b.Loop() {
		h := fnv.New32a()
		h.Write([]byte("nvme-0123456789abcdef"))
		h.Write([]byte("node-123.example.internal"))
		h.Write([]byte("local-fast"))
		_ = fmt.Sprintf("local-pv-%x", h.Sum32())
	}
}

func TestMachineVolumeID(t *testing.T) {
	legacy := VolumeID("node-a", "/mnt/disks/vol1")
	tests := []struct {
		name                  string
		machineID, systemUUID string
		wantSame              bool
	}{
		{name: "no identity keeps the legacy ID", wantSame: true},
		{name: "an identity gives a new ID", machineID: "m1", systemUUID: "u1"},
		{name: "only a system UUID gives a new ID", systemUUID: "u1"},
		{name: "only a machine ID gives a new ID", machineID: "m1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := MachineVolumeID("node-a", "/mnt/disks/vol1", tc.machineID, tc.systemUUID)
			if (got == legacy) != tc.wantSame {
				t.Errorf("MachineVolumeID = %s, legacy %s, want same %v", got, legacy, tc.wantSame)
			}
			if len(got) != IDLength {
				t.Errorf("ID %q has length %d", got, len(got))
			}
		})
	}
	if MachineVolumeID("n", "/p", "m1", "u1") == MachineVolumeID("n", "/p", "m2", "u1") {
		t.Error("two machines under one node name share a volume ID")
	}
	if MachineVolumeID("n", "/p", "m1", "") == MachineVolumeID("n", "/p", "", "m1") {
		t.Error("a machine ID and a system UUID of the same value share a volume ID")
	}
}
