package prober

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/nodeplug/nodeplug/pkg/util/groupexec"
)

// script returns a driver answering init with the given capabilities JSON
// and "Not supported" to everything else.
func script(caps string) string {
	return fmt.Sprintf(`#!/bin/sh
case "$1" in
init) echo '{"status":"Success","capabilities":%s}' ;;
*) echo '{"status":"Not supported"}' ;;
esac
`, caps)
}

const (
	capsAttach   = `{"attach":true}`
	capsNoAttach = `{"attach":false}`
	failingInit  = "#!/bin/sh\necho '{\"status\":\"Failure\",\"message\":\"backend unreachable\"}'\nexit 1\n"
)

// install writes content as <root>/<dirName>/<exe> atomically: a dotfile is
// written and renamed, as the installer does.
func install(t testing.TB, root, dirName, exe, content string) {
	t.Helper()
	dir := filepath.Join(root, dirName)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	tmp := filepath.Join(dir, "."+exe+".tmp")
	if err := os.WriteFile(tmp, []byte(content), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, exe)); err != nil {
		t.Fatal(err)
	}
}

// sink records events.
type sink struct {
	mu     sync.Mutex
	events []Event
}

func (s *sink) Event(_ context.Context, ev Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.events = append(s.events, ev)
}

func (s *sink) count(reason, drv string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, ev := range s.events {
		if ev.Reason == reason && (drv == "" || ev.Driver == drv) {
			n++
		}
	}
	return n
}

// testOptions are fast defaults for tests.
func testOptions(s *sink) Options {
	return Options{
		Events:               s,
		MinScanInterval:      100 * time.Millisecond,
		InitRetryMin:         time.Hour,
		InUseRecheckInterval: 20 * time.Millisecond,
		DirRetryMin:          10 * time.Millisecond,
		DirRetryMax:          50 * time.Millisecond,
	}
}

func newTestProber(t *testing.T, root string, opts Options) Prober {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	t.Cleanup(cancel)
	p, err := New(ctx, root, groupexec.New(), opts)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// waitFor waits, for at most 20 s, until cond holds for the current snapshot.
func waitFor(t testing.TB, p Prober, what string, cond func(*Snapshot) bool) *Snapshot {
	t.Helper()
	timeout := time.NewTimer(20 * time.Second)
	defer timeout.Stop()
	for {
		s := p.Snapshot()
		if cond(s) {
			return s
		}
		select {
		case <-s.Changed():
		case <-timeout.C:
			t.Fatalf("timed out waiting for %s; last snapshot: %s", what, describe(s))
		}
	}
}

func describe(s *Snapshot) string {
	out := fmt.Sprintf("gen %d", s.Generation)
	for name, e := range s.Entries {
		out += fmt.Sprintf("; %s %s attach=%t err=%v", name, e.State, e.Capabilities.Attach, e.Err)
	}
	for k, v := range s.Problems {
		out += fmt.Sprintf("; problem %s: %s", k, v)
	}
	return out
}

func ready(name string, attach bool) func(*Snapshot) bool {
	return func(s *Snapshot) bool {
		e := s.Entries[name]
		return e != nil && e.State == StateReady && e.Capabilities.Attach == attach
	}
}

func inState(name string, st State) func(*Snapshot) bool {
	return func(s *Snapshot) bool {
		e := s.Entries[name]
		return e != nil && e.State == st
	}
}

func absent(name string) func(*Snapshot) bool {
	return func(s *Snapshot) bool { return s.Entries[name] == nil }
}

// pollUntil polls cond every 10 ms for at most 20 s; for state that is not
// published in a Snapshot.
func pollUntil(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
