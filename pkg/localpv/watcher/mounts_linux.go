package watcher

import (
	"context"
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
)

// pollTimeoutMillis bounds each poll so that cancellation is noticed.
const pollTimeoutMillis = 1000

// watchMounts calls changed whenever the kernel flags the mount table file
// with POLLPRI, which it does on every mount and unmount in the namespace
// (proc_pid_mounts(5)). It returns when ctx ends.
//
// The file is opened with a raw system call: an *os.File would be registered
// with the Go runtime's epoll, whose own wake-ups consume the one-shot
// POLLPRI edge that this loop waits for.
func watchMounts(ctx context.Context, path string, changed func()) error {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("failed to open %s: %w", path, err)
	}
	defer func() { _ = unix.Close(fd) }()
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLPRI | unix.POLLERR}}
	for ctx.Err() == nil {
		n, err := unix.Poll(fds, pollTimeoutMillis)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return fmt.Errorf("failed to poll %s: %w", path, err)
		}
		if n > 0 && fds[0].Revents&(unix.POLLPRI|unix.POLLERR) != 0 {
			changed()
		}
	}
	return nil
}
