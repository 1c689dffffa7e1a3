package config

import (
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// upstreamDefault is the class of the upstream provisioner's default
// ConfigMap (its Helm chart's values), with another hostDir.
const upstreamDefault = `
fast-disks:
  hostDir: /mnt/fast-disks
  mountDir: /mnt/fast-disks
  blockCleanerCommand:
  - "/scripts/shred.sh"
  - "2"
  volumeMode: Filesystem
  fsType: ext4
  namePattern: "*"
`

func TestValidatePrograms(t *testing.T) {
	image := fakeImage{"/scripts/shred.sh": true, "/scripts/quick_reset.sh": true, "blkdiscard": true, "sh": true, "/bin/sh": true}
	binaries := []string{"/scripts/shred.sh", "/scripts/quick_reset.sh"}
	tests := []struct {
		name     string
		classMap string
		want     []string
	}{
		{name: "upstream's default ConfigMap", classMap: upstreamDefault},
		{name: "a class without a block cleaner", classMap: "fast:\n  hostDir: /mnt/fast\n"},
		{name: "busybox applets by bare name", classMap: `
a: {hostDir: /mnt/a, volumeMode: Block, blockCleanerCommand: ["blkdiscard", "$(LOCAL_PV_BLKDEVICE)"]}
b: {hostDir: /mnt/b, volumeMode: Block, blockCleanerCommand: ["sh", "-c", "dd if=/dev/zero of=$(LOCAL_PV_BLKDEVICE)"]}
`},
		{name: "a program the image lacks", classMap: `
local-block: {hostDir: /mnt/b, volumeMode: Block, blockCleanerCommand: ["/scripts/secure_erase.sh"]}
`, want: []string{`storageClassMap[local-block].blockCleanerCommand[0]: Invalid value: "/scripts/secure_erase.sh": the block cleaner of class local-block is not an executable of the provisioner image: exec: "/scripts/secure_erase.sh": file does not exist`}},
		{name: "every class with a missing program is named", classMap: `
a: {hostDir: /mnt/a, volumeMode: Block, blockCleanerCommand: ["wipefs", "-a", "$(LOCAL_PV_BLKDEVICE)"]}
b: {hostDir: /mnt/b, volumeMode: Block, blockCleanerCommand: ["/scripts/quick_reset.sh"]}
c: {hostDir: /mnt/c, fsType: xfs, blockCleanerCommand: ["nvme", "format"]}
`, want: []string{`storageClassMap[a].blockCleanerCommand[0]: Invalid value: "wipefs": the block cleaner of class a is not`,
			`storageClassMap[c].blockCleanerCommand[0]: Invalid value: "nvme": the block cleaner of class c is not`}},
		{name: "a cleaner program handed to a shell", classMap: `
a: {hostDir: /mnt/a, volumeMode: Block, blockCleanerCommand: ["sh", "/scripts/shred.sh", "2"]}
b: {hostDir: /mnt/b, volumeMode: Block, blockCleanerCommand: ["/bin/sh", "-e", "/scripts/quick_reset.sh"]}
`, want: []string{`storageClassMap[a].blockCleanerCommand[1]: Invalid value: "/scripts/shred.sh": is a program, not a shell script: run it without sh, as ["/scripts/shred.sh", ...]`,
			`storageClassMap[b].blockCleanerCommand[2]: Invalid value: "/scripts/quick_reset.sh": is a program, not a shell script: run it without /bin/sh`}},
		{name: "a shell running a cleaner program as a command", classMap: `
a: {hostDir: /mnt/a, volumeMode: Block, blockCleanerCommand: ["sh", "-c", "/scripts/shred.sh 2"]}
`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg, _, err := Parse(map[string]string{KeyStorageClassMap: tc.classMap})
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			errs := ValidatePrograms(cfg, image.lookPath, binaries)
			if len(errs) != len(tc.want) {
				t.Fatalf("got %d errors, want %d: %v", len(errs), len(tc.want), errs)
			}
			for i, w := range tc.want {
				if !strings.HasPrefix(errs[i].Error(), w) {
					t.Errorf("error %d = %q, want it to start with %q", i, errs[i].Error(), w)
				}
			}
		})
	}
}

// TestValidateProgramsWithExecLookPath runs the check the master runs, on
// absolute paths in a temporary directory.
func TestValidateProgramsWithExecLookPath(t *testing.T) {
	dir := t.TempDir()
	for name, mode := range map[string]os.FileMode{"exec.sh": 0o755, "data.sh": 0o644} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\n"), mode); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(filepath.Join(dir, "exec.sh"), filepath.Join(dir, "link.sh")); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, program, wantErr string
	}{
		{name: "executable", program: "exec.sh"},
		{name: "link to an executable, as the image's /scripts", program: "link.sh"},
		{name: "not executable", program: "data.sh", wantErr: "permission denied"},
		{name: "directory", program: ".", wantErr: "is a directory"},
		{name: "missing", program: "gone.sh", wantErr: "no such file or directory"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(dir, tc.program)
			cfg, _, err := Parse(map[string]string{KeyStorageClassMap: fmt.Sprintf("b: {hostDir: /mnt/b, volumeMode: Block, blockCleanerCommand: [%q]}", p)})
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			errs := ValidatePrograms(cfg, exec.LookPath, nil)
			switch {
			case tc.wantErr == "" && len(errs) > 0:
				t.Errorf("unexpected errors: %v", errs)
			case tc.wantErr != "" && (len(errs) != 1 || !strings.Contains(errs[0].Error(), tc.wantErr)):
				t.Errorf("errors %v, want one containing %q", errs, tc.wantErr)
			}
		})
	}
}

// fakeImage is the set of programs an image holds.
type fakeImage map[string]bool

func (f fakeImage) lookPath(file string) (string, error) {
	if f[file] {
		return file, nil
	}
	return "", &exec.Error{Name: file, Err: fs.ErrNotExist}
}
