package watcher

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/nodeplug/nodeplug/pkg/localpv/discovery"
)

func TestComputeViewChangesWithEntries(t *testing.T) {
	dir := t.TempDir()
	classes := []discovery.ClassSpec{{Name: "a", MountDir: dir, NamePattern: "vol*"},
		{Name: "missing", MountDir: filepath.Join(dir, "nope"), NamePattern: "*"}}
	v1, err := ComputeView(&discovery.Scanner{}, classes, discovery.SelfMountInfo)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "other"), 0o755); err != nil {
		t.Fatal(err)
	}
	v2, _ := ComputeView(&discovery.Scanner{}, classes, discovery.SelfMountInfo)
	if v2 != v1 {
		t.Fatal("an entry not matching the pattern changed the view")
	}
	if err := os.Mkdir(filepath.Join(dir, "vol1"), 0o755); err != nil {
		t.Fatal(err)
	}
	v3, _ := ComputeView(&discovery.Scanner{}, classes, discovery.SelfMountInfo)
	if v3.Digest == v1.Digest || v3.Entries != 1 {
		t.Fatalf("a matching entry did not change the view: %+v", v3)
	}
	if _, err := ComputeView(&discovery.Scanner{}, classes, filepath.Join(dir, "no-mountinfo")); err == nil {
		t.Fatal("an unreadable mount table must fail")
	}
}

func BenchmarkComputeView200(b *testing.B) {
	dir := b.TempDir()
	for i := range 200 {
		if err := os.Mkdir(filepath.Join(dir, "vol"+strconv.Itoa(i)), 0o755); err != nil {
			b.Fatal(err)
		}
	}
	classes := []discovery.ClassSpec{{Name: "a", MountDir: dir, NamePattern: "*"}}
	for b.Loop() {
		if _, err := ComputeView(&discovery.Scanner{}, classes, discovery.SelfMountInfo); err != nil {
			b.Fatal(err)
		}
	}
}
