// Command mount-utilities-upgrade upgrades the mount-utilities DaemonSet
// (updateStrategy OnDelete) node by node, never deleting a mount pod while a
// volume it serves is in use. See deploy/mount-utilities/README.md.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"k8s.io/klog/v2"

	"github.com/nodeplug/nodeplug/cmd/mount-utilities-upgrade/app"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	code := app.Main(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	klog.FlushAndExit(klog.ExitFlushTimeout, code)
}
