package prober

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nodeplug/nodeplug/pkg/flexvolume/driver"
)

// TestBadDrivers installs every kind of broken driver next to a good one.
// Each gets a clear error; the good driver is unaffected.
func TestBadDrivers(t *testing.T) {
	root := t.TempDir()
	s := &sink{}
	opts := testOptions(s)
	opts.Driver = driver.Config{InitTimeout: 2 * time.Second, KillGrace: time.Second}
	p := newTestProber(t, root, opts)

	install(t, root, "example.com~good", "good", script(capsNoAttach))
	bad := []struct {
		name    string
		content string
		wantErr error
		wantMsg string
	}{
		{"nonjson", "#!/bin/sh\necho not json\n", driver.ErrInvalidOutput, "not json"},
		{"huge", "#!/bin/sh\nhead -c 10485760 /dev/zero | tr '\\0' x\n", driver.ErrOutputTooLarge, "size limit"},
		{"hang", "#!/bin/sh\nsleep 300\n", driver.ErrTimeout, "process group was killed"},
		{"exitcode", "#!/bin/sh\necho '{\"status\":\"Success\"}'\nexit 3\n", driver.ErrExitStatus, "driver bug"},
	}
	for _, b := range bad {
		install(t, root, "example.com~"+b.name, b.name, b.content)
	}
	// Permission denied: installed without any execute bit.
	install(t, root, "example.com~noexec", "noexec", script(capsNoAttach))
	if err := os.Chmod(filepath.Join(root, "example.com~noexec", "noexec"), 0o644); err != nil {
		t.Fatal(err)
	}
	// A directory without its executable is not a driver (yet).
	if err := os.Mkdir(filepath.Join(root, "example.com~empty"), 0o755); err != nil {
		t.Fatal(err)
	}
	// An invalid directory name.
	install(t, root, "Bad~Vendor~x", "x", script(capsNoAttach))

	snap := waitFor(t, p, "all bad drivers settled", func(s *Snapshot) bool {
		for _, b := range append(bad, struct {
			name, content string
			wantErr       error
			wantMsg       string
		}{name: "noexec"}) {
			if !inState("example.com/"+b.name, StateInitFailed)(s) {
				return false
			}
		}
		return s.Problems["dir:Bad~Vendor~x"] != "" && ready("example.com/good", false)(s)
	})
	for _, b := range bad {
		t.Run(b.name, func(t *testing.T) {
			err := snap.Entries["example.com/"+b.name].Err
			if !errors.Is(err, b.wantErr) || !strings.Contains(err.Error(), b.wantMsg) {
				t.Errorf("error %v, want %v containing %q", err, b.wantErr, b.wantMsg)
			}
		})
	}
	t.Run("permission denied", func(t *testing.T) {
		if err := snap.Entries["example.com/noexec"].Err; !errors.Is(err, driver.ErrPermissionDenied) {
			t.Errorf("error %v, want ErrPermissionDenied", err)
		}
	})
	t.Run("missing executable", func(t *testing.T) {
		if e := snap.Entries["example.com/empty"]; e != nil {
			t.Errorf("directory without executable loaded: %+v", e)
		}
	})
	t.Run("invalid driver dir name", func(t *testing.T) {
		if msg := snap.Problems["dir:Bad~Vendor~x"]; !strings.Contains(msg, "single '~'") {
			t.Errorf("problem %q", msg)
		}
		if s.count(ReasonDriverDirInvalid, "Bad~Vendor~x") != 1 {
			t.Errorf("want one %s event", ReasonDriverDirInvalid)
		}
	})
	if got := len(snap.Entries); got != 6 {
		t.Errorf("%d entries, want 6: %s", got, describe(snap))
	}
}
