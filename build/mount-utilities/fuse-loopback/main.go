// Command nodeplug-fuse-loopback serves a directory at a mount point
// through FUSE: the daemon behind the nodeplug.io/fuse flex driver of the
// mount-utilities image.
//
//	nodeplug-fuse-loopback [-v=N] [-fuse-debug] SOURCE MOUNTPOINT
//
// It mounts with mount(2) itself (it runs as root in the privileged
// mount-utilities pod), so no fusermount helper is needed. It exits 0 when
// the mount is unmounted from outside (umount MOUNTPOINT), and unmounts and
// exits 0 on SIGTERM or SIGINT.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"k8s.io/klog/v2"
)

const (
	// fsName is the mount's source in /proc/self/mountinfo; the type is
	// "fuse." + fsType.
	fsName = "nodeplug-fuse"
	fsType = "nodeplug"
	// detachWait bounds how long a lazily detached mount that is still in
	// use keeps the daemon alive after SIGTERM.
	detachWait = 10 * time.Second
)

func main() {
	flags := flag.NewFlagSet("nodeplug-fuse-loopback", flag.ExitOnError)
	klog.InitFlags(flags)
	debug := flags.Bool("fuse-debug", false, "log every FUSE request")
	flags.Usage = func() {
		fmt.Fprintln(flags.Output(), "usage: nodeplug-fuse-loopback [flags] SOURCE MOUNTPOINT")
		flags.PrintDefaults()
	}
	_ = flags.Parse(os.Args[1:])
	if flags.NArg() != 2 {
		flags.Usage()
		os.Exit(2)
	}
	logger := klog.Background()
	ctx := klog.NewContext(context.Background(), logger)
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGTERM, syscall.SIGINT)
	code := 0
	if err := run(ctx, flags.Arg(0), flags.Arg(1), *debug, signals); err != nil {
		logger.Error(err, "FUSE loopback failed", "source", flags.Arg(0), "mountpoint", flags.Arg(1))
		code = 1
	}
	klog.FlushAndExit(klog.ExitFlushTimeout, code)
}

func run(ctx context.Context, source, mountpoint string, debug bool, signals <-chan os.Signal) error {
	logger := klog.FromContext(ctx)
	source, err := filepath.Abs(source)
	if err != nil {
		return fmt.Errorf("source: %w", err)
	}
	mountpoint, err = filepath.Abs(mountpoint)
	if err != nil {
		return fmt.Errorf("mountpoint: %w", err)
	}
	root, err := fs.NewLoopbackRoot(source)
	if err != nil {
		return fmt.Errorf("serving %s: %w", source, err)
	}
	server, err := fs.Mount(mountpoint, root, &fs.Options{MountOptions: fuse.MountOptions{
		// mount(2) directly, never fall back to fusermount (not in the image).
		DirectMount:       true,
		DirectMountStrict: true,
		FsName:            fsName,
		Name:              fsType,
		// Pods run as any user; the kernel checks the files' modes for
		// them (the daemon itself is root and would allow everything).
		AllowOther: true,
		Options:    []string{"default_permissions"},
		Debug:      debug,
	}})
	if err != nil {
		return fmt.Errorf("mounting %s at %s: %w", source, mountpoint, err)
	}
	logger.Info("Serving", "source", source, "mountpoint", mountpoint, "type", "fuse."+fsType)

	served := make(chan struct{})
	go func() {
		server.Wait()
		close(served)
	}()
	select {
	case <-served:
		logger.Info("Unmounted from outside, exiting", "mountpoint", mountpoint)
		return nil
	case sig := <-signals:
		logger.Info("Unmounting", "signal", sig.String(), "mountpoint", mountpoint)
		return unmount(ctx, server, mountpoint, served)
	}
}

// unmount unmounts mountpoint and waits for the server to stop. A mount
// that is busy is detached lazily and given detachWait to be released.
func unmount(ctx context.Context, server *fuse.Server, mountpoint string, served <-chan struct{}) error {
	logger := klog.FromContext(ctx)
	if err := server.Unmount(); err != nil {
		select {
		case <-served: // unmounted from outside meanwhile
			return nil
		default:
		}
		logger.Error(err, "Unmount failed, detaching lazily", "mountpoint", mountpoint)
		if err := syscall.Unmount(mountpoint, syscall.MNT_DETACH); err != nil && !errors.Is(err, syscall.EINVAL) {
			return fmt.Errorf("detaching %s: %w", mountpoint, err)
		}
	}
	select {
	case <-served:
		logger.Info("Unmounted", "mountpoint", mountpoint)
	case <-time.After(detachWait):
		logger.Info("Detached mount still in use, exiting anyway", "mountpoint", mountpoint, "waited", detachWait)
	}
	return nil
}
