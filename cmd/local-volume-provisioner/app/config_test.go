package app

import (
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/klog/v2/ktesting"

	"github.com/nodeplug/nodeplug/cmd/local-volume-provisioner/app/options"
)

func TestLoadConfigChecksCleanerPrograms(t *testing.T) {
	const classMap = `local-block:
  hostDir: /mnt/block
  volumeMode: Block
  blockCleanerCommand: %s
`
	const shred = `["/scripts/shred.sh", "2"]`
	tests := []struct {
		name    string
		command string
		// image is what the fake lookPath finds.
		image   []string
		noCheck bool
		wantErr []string
	}{
		{name: "program in the image", command: shred, image: []string{"/scripts/shred.sh"}},
		{name: "program missing", command: shred, wantErr: []string{
			`invalid configuration in `,
			`storageClassMap[local-block].blockCleanerCommand[0]: Invalid value: "/scripts/shred.sh": the block cleaner of class local-block is not an executable of the provisioner image`,
			"the image holds /scripts/blkdiscard.sh, /scripts/dd_zero.sh, /scripts/fsclean.sh, /scripts/quick_reset.sh, /scripts/shred.sh and busybox's applets in /bin",
			"set --check-cleaner-programs=false"}},
		{name: "program handed to a shell", command: `["sh", "/scripts/shred.sh", "2"]`, image: []string{"sh", "/scripts/shred.sh"},
			wantErr: []string{`storageClassMap[local-block].blockCleanerCommand[1]: Invalid value: "/scripts/shred.sh": is a program, not a shell script`}},
		{name: "check switched off", command: shred, noCheck: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			o := options.NewMasterOptions()
			o.ConfigDir = t.TempDir()
			o.CheckCleanerPrograms = !tc.noCheck
			if err := os.WriteFile(filepath.Join(o.ConfigDir, "storageClassMap"), []byte(fmt.Sprintf(classMap, tc.command)), 0o644); err != nil {
				t.Fatal(err)
			}
			lookPath := func(file string) (string, error) {
				for _, p := range tc.image {
					if p == file {
						return p, nil
					}
				}
				return "", &exec.Error{Name: file, Err: fs.ErrNotExist}
			}
			cfg, err := loadConfig(ctx, o, lookPath)
			if len(tc.wantErr) == 0 {
				if err != nil || cfg == nil {
					t.Fatalf("loadConfig: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("loadConfig accepted the configuration")
			}
			for _, w := range tc.wantErr {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}
