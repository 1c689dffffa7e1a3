package cache

import (
	"slices"
	"testing"

	"github.com/nodeplug/nodeplug/pkg/kubelet/pluginwatcher/socket"
)

// TestForgetTree: a removed socket is forgotten alone; a removed directory
// takes every socket below it, and only those.
func TestForgetTree(t *testing.T) {
	paths := []string{"/r/a.sock", "/r/ab.sock", "/r/d/b.sock", "/r/d/e/c.sock", "/r/dd/x.sock"}
	for name, tc := range map[string]struct {
		path       string
		want, left []string
	}{
		"socket":           {path: "/r/a.sock", want: []string{"/r/a.sock"}, left: []string{"/r/ab.sock", "/r/d/b.sock", "/r/d/e/c.sock", "/r/dd/x.sock"}},
		"directory":        {path: "/r/d", want: []string{"/r/d/b.sock", "/r/d/e/c.sock"}, left: []string{"/r/a.sock", "/r/ab.sock", "/r/dd/x.sock"}},
		"nested directory": {path: "/r/d/e", want: []string{"/r/d/e/c.sock"}, left: []string{"/r/a.sock", "/r/ab.sock", "/r/d/b.sock", "/r/dd/x.sock"}},
		"unknown path":     {path: "/r/nope.sock", left: paths},
	} {
		t.Run(name, func(t *testing.T) {
			d := NewDesiredStateOfWorld(nil)
			for i, p := range paths {
				d.Observe(p, p[len("/r/"):], socket.ID{Ino: uint64(i + 1)})
			}
			got := d.ForgetTree(tc.path)
			slices.Sort(got)
			if !slices.Equal(got, tc.want) {
				t.Errorf("ForgetTree(%q) = %v, want %v", tc.path, got, tc.want)
			}
			left := d.Paths()
			slices.Sort(left)
			if !slices.Equal(left, tc.left) {
				t.Errorf("left %v, want %v", left, tc.left)
			}
		})
	}
}

// BenchmarkForgetSocket: forgetting one socket among many, as each removal
// of a churning plugin's socket does.
func BenchmarkForgetSocket(b *testing.B) {
	d := NewDesiredStateOfWorld(nil)
	for i := range 1000 {
		p := "/r/s" + string(rune('a'+i%26)) + string(rune('a'+i/26)) + ".sock"
		d.Observe(p, p[len("/r/"):], socket.ID{Ino: uint64(i + 1)})
	}
	b.ResetTimer()
	for i := range b.N {
		d.Observe("/r/churn.sock", "churn.sock", socket.ID{Ino: uint64(1_000_000 + i)})
		d.ForgetTree("/r/churn.sock")
	}
}
