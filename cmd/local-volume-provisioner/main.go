// Command local-volume-provisioner is nodeplug's distributed local PV static
// provisioner. One binary holds four roles, chosen by subcommand: master
// (Deployment), watcher (DaemonSet), and the discover and cleanup Job
// entrypoints. Started under the name of a cleaner program (the image links
// /scripts/shred.sh and the others to it), it runs that program instead.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	_ "k8s.io/component-base/logs/json/register"
	"k8s.io/klog/v2"

	"github.com/nodeplug/nodeplug/cmd/local-volume-provisioner/app"
)

func main() {
	// SIGTERM (a pod being stopped) cancels the context: the master then
	// releases its leader Lease, so a standby takes over at once instead of
	// waiting for the Lease to expire, and the servers shut down cleanly.
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	if code, ok := app.RunCleanerProgram(ctx, os.Args); ok {
		stop()
		klog.FlushAndExit(klog.ExitFlushTimeout, code)
	}
	cmd := app.NewCommand()
	cmd.SetContext(ctx)
	code := app.Run(cmd) // cli.Run, with the exit code of a cleanup identity mismatch
	stop()
	os.Exit(code)
}
