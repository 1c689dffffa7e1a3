package app

import (
	"context"
	"os"
	"path/filepath"

	"k8s.io/klog/v2"

	"github.com/nodeplug/nodeplug/pkg/localpv/wipe"
)

// RunCleanerProgram runs the cleaner program named by the base name of
// argv[0], when it is one, and returns its exit status; ok is false for any
// other name. The image installs the programs as links to this binary at
// upstream's paths (/scripts/shred.sh, ...; see build/local-volume-provisioner),
// so that a blockCleanerCommand written for the upstream provisioner runs
// unchanged. The programs take their arguments as upstream's scripts do, so
// they bypass the subcommands and their flags. The caller flushes the logs.
func RunCleanerProgram(ctx context.Context, argv []string) (code int, ok bool) {
	if len(argv) == 0 {
		return 0, false
	}
	name := filepath.Base(argv[0])
	if !wipe.IsProgram(name) {
		return 0, false
	}
	ctx = klog.NewContext(ctx, klog.FromContext(ctx).WithName(name))
	return wipe.Main(ctx, name, argv[1:], os.Stderr), true
}
