package app

import (
	"bufio"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"k8s.io/klog/v2/ktesting"

	"github.com/nodeplug/nodeplug/pkg/localpv/wipe"
)

func TestRunCleanerProgram(t *testing.T) {
	tests := []struct {
		name     string
		argv     []string
		wantRun  bool
		wantCode int
		// wantEmpty is whether the volume must be empty afterwards.
		wantEmpty bool
	}{
		{name: "fsclean.sh at its image path", argv: []string{"/scripts/fsclean.sh"}, wantRun: true, wantEmpty: true},
		{name: "fsclean.sh by bare name", argv: []string{"fsclean.sh"}, wantRun: true, wantEmpty: true},
		{name: "a program with bad arguments", argv: []string{"/scripts/fsclean.sh", "extra"}, wantRun: true, wantCode: 2},
		{name: "the provisioner itself", argv: []string{"/local-volume-provisioner", "master"}},
		{name: "another script", argv: []string{"/scripts/other.sh"}},
		{name: "no argv", argv: nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			vol := t.TempDir()
			if err := os.WriteFile(filepath.Join(vol, "data"), []byte("x"), 0o644); err != nil {
				t.Fatal(err)
			}
			t.Setenv(wipe.FilesystemVariable, vol)
			code, ran := RunCleanerProgram(ctx, tc.argv)
			if ran != tc.wantRun || code != tc.wantCode {
				t.Errorf("RunCleanerProgram(%q) = %d, %v; want %d, %v", tc.argv, code, ran, tc.wantCode, tc.wantRun)
			}
			entries, _ := os.ReadDir(vol)
			if empty := len(entries) == 0; empty != tc.wantEmpty {
				t.Errorf("volume empty: %v, want %v", empty, tc.wantEmpty)
			}
		})
	}
}

// TestImageInstallsCleanerPrograms checks that the image recipe links every
// cleaner program, and nothing else, under /scripts to the binary.
func TestImageInstallsCleanerPrograms(t *testing.T) {
	f, err := os.Open("../../../build/local-volume-provisioner/image.args")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var args []string
	for sc := bufio.NewScanner(f); sc.Scan(); {
		if line := sc.Text(); !strings.HasPrefix(line, "#") {
			args = append(args, line)
		}
	}
	var linked []string
	for i := 0; i+1 < len(args); i++ {
		if args[i] != "-link" {
			continue
		}
		dest, target, _ := strings.Cut(args[i+1], "=")
		if strings.HasPrefix(dest, wipe.Dir+"/") {
			linked = append(linked, dest)
			if target != "/local-volume-provisioner" {
				t.Errorf("%s links to %s, want /local-volume-provisioner", dest, target)
			}
		}
	}
	slices.Sort(linked)
	if !slices.Equal(linked, wipe.Paths()) {
		t.Errorf("image.args links %q under %s, want %q", linked, wipe.Dir, wipe.Paths())
	}
}
