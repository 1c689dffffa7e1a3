package dirwatch_test

import (
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/nodeplug/nodeplug/pkg/util/dirwatch"
)

// TestOverflowReal overflows the kernel's inotify queue: the caller stops
// reading while far more events than fs.inotify.max_queued_events are
// made, then a file is made whose event the kernel drops. The dirwatch.Rescan that
// follows is what lets the caller find it.
func TestOverflowReal(t *testing.T) {
	limit := 16384
	if b, err := os.ReadFile("/proc/sys/fs/inotify/max_queued_events"); err == nil {
		_, _ = fmt.Sscan(strings.TrimSpace(string(b)), &limit)
	}
	if limit > 200000 {
		t.Skipf("max_queued_events is %d; too many files to create", limit)
	}
	root := t.TempDir()
	m := &counts{}
	w, err := start(t, root, dirwatch.Options{Buffer: 1, Metrics: m})
	if err != nil {
		t.Fatal(err)
	}
	next(t, w, "start", isRescan(dirwatch.ReasonStarted))
	for i := 0; i < limit+limit/2+8192; i++ {
		touch(t, join(root, fmt.Sprintf("n%d", i)))
	}
	touch(t, join(root, "late"))
	next(t, w, "overflow", isRescan(dirwatch.ReasonOverflow))
	if m.overflows.Load() == 0 {
		t.Fatal("overflow not counted")
	}
	if _, err := os.Stat(join(root, "late")); err != nil {
		t.Fatal(err)
	}
}

// TestStorm changes a tree from several goroutines at once. A caller that
// applies the events, and reads the tree again at each dirwatch.Rescan, ends with
// the tree as it is on disk, and every directory is watched.
func TestStorm(t *testing.T) {
	root := t.TempDir()
	w, err := start(t, root, dirwatch.Options{MaxDepth: dirwatch.Unlimited, ReportExisting: true})
	if err != nil {
		t.Fatal(err)
	}
	next(t, w, "start", isRescan(dirwatch.ReasonStarted))
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			storm(t, join(root, fmt.Sprintf("g%d", g)), 150)
		}()
	}
	wg.Wait()
	touch(t, join(root, "done"))
	view := map[string]bool{}
	for {
		ev := next(t, w, "events", func(dirwatch.Event) bool { return true })
		apply(t, root, view, ev)
		if ev.Path == join(root, "done") {
			break
		}
	}
	disk := readTree(t, root)
	if !maps.Equal(view, disk) {
		t.Fatalf("caller's view differs from the disk:\nview %v\ndisk %v", keys(view), keys(disk))
	}
	for p, isDir := range disk {
		if isDir && !w.Watching(p) {
			t.Errorf("%s not watched", p)
		}
	}
}

// storm makes and removes nested directories and files below dir.
func storm(t *testing.T, dir string, n int) {
	for i := range n {
		d := filepath.Join(dir, fmt.Sprintf("d%d", i%7), fmt.Sprintf("e%d", i%3))
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Error(err)
			return
		}
		_ = os.WriteFile(filepath.Join(d, fmt.Sprintf("f%d", i)), nil, 0o644)
		if i%5 == 0 {
			_ = os.RemoveAll(filepath.Join(dir, fmt.Sprintf("d%d", (i+3)%7)))
		}
	}
}

// apply is what a caller does with an event: paths in the view are
// mapped to whether they are directories.
func apply(t *testing.T, root string, view map[string]bool, ev dirwatch.Event) {
	switch {
	case ev.Op == dirwatch.Rescan:
		clear(view)
		maps.Copy(view, readTree(t, root))
	case ev.Op.Gone():
		for p := range view {
			if p == ev.Path || strings.HasPrefix(p, ev.Path+"/") {
				delete(view, p)
			}
		}
	case ev.Op.Has(dirwatch.Create):
		if fi, err := os.Lstat(ev.Path); err == nil {
			view[ev.Path] = fi.IsDir()
		}
	}
}

func readTree(t *testing.T, root string) map[string]bool {
	tree := map[string]bool{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if p != root {
			tree[p] = d.IsDir()
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return tree
}

func keys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
