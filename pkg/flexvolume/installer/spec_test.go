package installer

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseDriverSpec(t *testing.T) {
	src := filepath.Join(t.TempDir(), "drv")
	if err := os.WriteFile(src, []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		in       string
		wantDir  string
		wantErr  string
		wantIsNE bool
	}{
		{name: "vendor and driver", in: "example.com/nfs=" + src, wantDir: "example.com~nfs"},
		{name: "tilde form", in: "example.com~nfs=" + src, wantDir: "example.com~nfs"},
		{name: "no vendor", in: "nfs=" + src, wantDir: "nfs"},
		{name: "no file", in: "example.com/nfs", wantErr: "want <vendor>/<driver>=<file>"},
		{name: "empty file", in: "example.com/nfs=", wantErr: "want <vendor>/<driver>=<file>"},
		{name: "upper case vendor", in: "Example.com/nfs=" + src, wantErr: `invalid vendor "Example.com"`},
		{name: "driver with slash", in: "example.com/a/b=" + src, wantErr: `invalid driver name "a/b"`},
		{name: "missing file", in: "example.com/nfs=/nonexistent", wantErr: "driver file", wantIsNE: true},
		{name: "directory", in: "example.com/nfs=" + t.TempDir(), wantErr: "not a regular file"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseDriverSpec(tc.in)
			if tc.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				if got.Name.String() != tc.wantDir || got.Source != src {
					t.Fatalf("got %s from %s, want %s from %s", got.Name, got.Source, tc.wantDir, src)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("got %v, want an error containing %q", err, tc.wantErr)
			}
			if tc.wantIsNE && !errors.Is(err, fs.ErrNotExist) {
				t.Fatalf("got %v, want it to wrap fs.ErrNotExist", err)
			}
		})
	}
}
