package throttle

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

func TestThrottler(t *testing.T) {
	var mu sync.Mutex
	var released []string
	th := New(50, 2, func(p string) { mu.Lock(); released = append(released, p); mu.Unlock() }, nil)
	defer th.Stop()
	for _, p := range []string{"a1", "a2"} {
		if !th.Admit("a", p) {
			t.Fatalf("%s throttled within burst", p)
		}
	}
	for _, p := range []string{"a3", "a4", "a5"} {
		if th.Admit("a", p) {
			t.Fatalf("%s admitted beyond burst", p)
		}
	}
	if !th.Admit("b", "b1") {
		t.Fatal("another key was throttled")
	}
	th.Forget("a4")
	twoReleases := func(context.Context) (bool, error) { mu.Lock(); defer mu.Unlock(); return len(released) == 2, nil }
	if err := wait.PollUntilContextTimeout(context.Background(), 5*time.Millisecond, 10*time.Second, true, twoReleases); err != nil {
		t.Fatalf("timed out waiting for: two releases")
	}
	mu.Lock()
	got := strings.Join(released, ",")
	mu.Unlock()
	if got != "a5,a3" {
		t.Errorf("released %s, want newest first without the forgotten one: a5,a3", got)
	}
	if !th.Admit("a", "a5") || th.ParkedCount() != 0 {
		t.Error("a released path must be admitted with the token reserved for it")
	}
}
