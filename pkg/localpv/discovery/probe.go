package discovery

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"golang.org/x/sys/unix"
	"k8s.io/klog/v2"

	"github.com/nodeplug/nodeplug/pkg/localpv/report"
)

// DefaultProbeTimeout bounds the probe of one device.
const DefaultProbeTimeout = 10 * time.Second

// Device is an open device node (or image) that the probe reads.
type Device interface {
	io.ReaderAt
	io.Closer
	// Size is the device's size in bytes.
	Size() (int64, error)
}

// Opener opens a device node read-only; exclusive asks for O_EXCL, which
// fails with unix.EBUSY while the device is mounted, held by md or
// device-mapper, or opened exclusively by another program.
type Opener func(path string, exclusive bool) (Device, error)

// OpenDevice is the Opener of device nodes.
func OpenDevice(path string, exclusive bool) (Device, error) {
	flags := unix.O_RDONLY | unix.O_CLOEXEC
	if exclusive {
		flags |= unix.O_EXCL
	}
	fd, err := unix.Open(path, flags, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	return fileDevice{os.NewFile(uintptr(fd), path)}, nil
}

type fileDevice struct{ *os.File }

func (f fileDevice) Size() (int64, error) { return f.Seek(0, io.SeekEnd) }

// busyAttempts and busyPause: an exclusive open that fails with EBUSY is
// tried again, as the discovery containers of one pod probe the same disks
// at the same time, each holding its exclusive open for an instant.
const (
	busyAttempts = 3
	busyPause    = 20 * time.Millisecond
)

// probeResult is what the probe of one device found.
type probeResult struct {
	signature string // a type, report.SignatureNone, or "" when unread
	busy      bool
	err       error
}

// probe tells whether the device is in use (an exclusive open fails with
// EBUSY), then reads its first and last bytes for signatures, through a
// second, shared open: the exclusive one is closed at once.
func probe(open Opener, path string) probeResult {
	var r probeResult
	for attempt := 1; ; attempt++ {
		d, err := open(path, true)
		if err == nil {
			_ = d.Close()
			break
		}
		if !errors.Is(err, unix.EBUSY) {
			return probeResult{err: err}
		}
		if attempt == busyAttempts {
			r.busy = true
			break
		}
		time.Sleep(busyPause)
	}
	d, err := open(path, false)
	if err != nil {
		r.err = err
		return r
	}
	defer func() { _ = d.Close() }()
	r.signature, r.err = readSignature(d, path)
	return r
}

// ProbeSignature reads the first and last bytes of a device or image and
// returns the partition table, file system or other content type they
// hold, or report.SignatureNone. It only reads, and takes no exclusive
// open.
func ProbeSignature(path string) (string, error) {
	d, err := OpenDevice(path, false)
	if err != nil {
		return "", fmt.Errorf("failed to open %s: %w", path, err)
	}
	defer func() { _ = d.Close() }()
	return readSignature(d, path)
}

func readSignature(d Device, path string) (string, error) {
	size, err := d.Size()
	if err != nil {
		return "", fmt.Errorf("failed to read the size of %s: %w", path, err)
	}
	b := &deviceBytes{size: size}
	if b.head, err = readAt(d, 0, min(size, headBytes)); err != nil {
		return "", fmt.Errorf("failed to read %s: %w", path, err)
	}
	if size > int64(len(b.head)) {
		n := min(size, tailBytes)
		if b.tail, err = readAt(d, size-n, n); err != nil {
			return "", fmt.Errorf("failed to read the end of %s: %w", path, err)
		}
	}
	if name := matchSignature(b); name != "" {
		return name, nil
	}
	return report.SignatureNone, nil
}

func readAt(d Device, off, n int64) ([]byte, error) {
	buf := make([]byte, n)
	got, err := d.ReadAt(buf, off)
	if err != nil && !(errors.Is(err, io.EOF) && int64(got) == n) {
		return nil, err
	}
	return buf, nil
}

// probeWithin runs the probe of one device and waits for it at most
// timeout. A read that hangs (a dead path, a stuck controller) is left
// behind: the device is reported unreadable and discovery goes on.
func probeWithin(ctx context.Context, open Opener, path string, timeout time.Duration) probeResult {
	done := make(chan probeResult, 1)
	go func() { done <- probe(open, path) }()
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case r := <-done:
		return r
	case <-t.C:
		klog.FromContext(ctx).Info("Device probe did not finish, giving up on it", "device", path, "timeout", timeout)
		return probeResult{err: fmt.Errorf("probe of %s did not finish within %v", path, timeout)}
	case <-ctx.Done():
		return probeResult{err: ctx.Err()}
	}
}
