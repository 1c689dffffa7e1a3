package unwiped_test

import (
	"encoding/json"
	"fmt"
	"runtime"
	"strings"
	"testing"

	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/nodeplug/localpv-api/localpv/v1alpha1"

	"github.com/nodeplug/nodeplug/pkg/localpv/identity"
	"github.com/nodeplug/nodeplug/pkg/localpv/unwiped"
	"github.com/nodeplug/nodeplug/pkg/localpv/unwiped/unwipedtest"
)

// largestEntry is an entry whose every field is as long as it may be.
func largestEntry(i int) unwiped.Disk {
	return unwiped.Disk{ID: identity.ID("wwn:" + strings.Repeat("a", identity.MaxLength-24) + fmt.Sprintf("%020d", i)),
		PV: strings.Repeat("p", 253), Node: strings.Repeat("n", 253), Path: "/" + strings.Repeat("d", 1023),
		Reason: strings.Repeat("r", v1alpha1.MaxReasonLength)}
}

// BenchmarkMemoryPerEntry is what the master's cache of the memory of
// unwiped disks holds per entry (heap bytes, B/entry), beside the size of
// an entry as the apiserver stores it (JSON, json-B/entry) and of the
// largest entry there may be (json-B/largest): each disk is an object of
// its own, so no object grows with the memory.
func BenchmarkMemoryPerEntry(b *testing.B) {
	const n = 10000
	objs := make([]k8sruntime.Object, 0, n)
	size := 0
	for i := range n {
		d := unwiped.Disk{ID: identity.WWN(fmt.Sprintf("naa.5%015x", i+1)), PV: fmt.Sprintf("local-pv-%016x", i),
			Node: fmt.Sprintf("node-%05d", i%5000), Path: fmt.Sprintf("/mnt/disks/nvme%dn1", i%20), Reason: "node deleted with a wipe pending"}
		u := unwipedtest.Object(d)
		raw, err := json.Marshal(u)
		if err != nil {
			b.Fatal(err)
		}
		size += len(raw)
		objs = append(objs, u)
	}
	largest, err := json.Marshal(unwipedtest.Object(largestEntry(0)))
	if err != nil {
		b.Fatal(err)
	}
	dyn := unwipedtest.Client(objs...)
	var before, after runtime.MemStats
	for b.Loop() {
		runtime.GC()
		runtime.ReadMemStats(&before)
		s := unwipedtest.CachedStore(b, dyn, fake.NewClientset(), "lpv", nil, true)
		runtime.GC()
		runtime.ReadMemStats(&after)
		if _, err := s.Candidates(b.Context(), "node-00000", "/mnt/disks/nvme0n1", identity.WWN("naa.50000000000000001")); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/n, "B/entry")
	b.ReportMetric(float64(size)/n, "json-B/entry")
	b.ReportMetric(float64(len(largest)), "json-B/largest")
}
