// Command init is the entrypoint (/init) of the mount-utilities image.
//
//	/init [-v=N] [--] [COMMAND [ARG...]]
//
// It runs as the container's PID 1. FUSE daemons that the flex driver
// starts through CRI exec outlive the driver's shell and are reparented to
// PID 1, so /init reaps them when they exit (a PID 1 that does not would
// collect zombies). Without a command it waits for SIGTERM or SIGINT and
// exits 0. With one it runs it, forwards SIGTERM and SIGINT to it, and
// exits when it exits (0 if the forwarded signal ended it).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"k8s.io/klog/v2"

	"github.com/nodeplug/nodeplug/build/mount-utilities/init/supervisor"
)

func main() {
	flags := flag.NewFlagSet("init", flag.ExitOnError)
	klog.InitFlags(flags)
	flags.Usage = func() {
		fmt.Fprintln(flags.Output(), "usage: /init [-v=N] [--] [COMMAND [ARG...]]")
		flags.PrintDefaults()
	}
	// Parsing stops at the first non-flag argument: the command's own
	// flags are left alone.
	_ = flags.Parse(os.Args[1:])
	logger := klog.Background()
	ctx := klog.NewContext(context.Background(), logger)

	// Register before anything can exit, so that no SIGCHLD is missed.
	signals := make(chan os.Signal, 16)
	signal.Notify(signals, syscall.SIGCHLD, syscall.SIGTERM, syscall.SIGINT)
	if os.Getpid() != 1 {
		if err := supervisor.BecomeSubreaper(); err != nil {
			logger.Error(err, "Not PID 1 and cannot become a child subreaper: orphans will not be reaped here")
		}
	}
	code, err := supervisor.Run(ctx, flags.Args(), signals)
	if err != nil {
		logger.Error(err, "Supervisor failed")
	}
	klog.FlushAndExit(klog.ExitFlushTimeout, code)
}
