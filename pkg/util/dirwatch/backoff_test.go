package dirwatch_test

import (
	"testing"
	"time"

	"github.com/nodeplug/nodeplug/pkg/util/dirwatch"
)

func TestBackoff(t *testing.T) {
	b := dirwatch.Backoff{Min: time.Second, Max: 5 * time.Second}
	var got []time.Duration
	for i := 0; i < 5; i++ {
		got = append(got, b.Next())
	}
	want := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 5 * time.Second, 5 * time.Second}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("backoff = %v, want %v", got, want)
		}
	}
	b.Reset()
	if b.Next() != time.Second {
		t.Error("reset did not restart the backoff")
	}
}

func TestOpString(t *testing.T) {
	if got := (dirwatch.Create | dirwatch.Write).String(); got != "Create|Write" {
		t.Fatalf("got %q", got)
	}
}
