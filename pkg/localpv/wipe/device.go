package wipe

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"k8s.io/klog/v2"
)

// ErrDiscardUnsupported is returned by Device.Discard when the device does
// not support discard (its queue reports no discard sectors).
var ErrDiscardUnsupported = errors.New("the device does not support discard")

// Device is a block device opened for writing by one program.
type Device interface {
	io.WriterAt
	// Name is the path the device was opened with.
	Name() string
	// Size is the size of the device in bytes.
	Size() int64
	// Discard discards n bytes from offset off. Both are multiples of 512.
	// It returns ErrDiscardUnsupported, wrapped, when the device cannot.
	Discard(off, n int64) error
	// Sync flushes every write to the device.
	Sync() error
	Close() error
}

// span is a byte range of a device.
type span struct{ off, len int64 }

func (s span) end() int64 { return s.off + s.len }

const (
	// chunkBytes is the size of each write and of each random refill.
	chunkBytes = 1 << 20
	// discardChunkBytes is the size of each discard request, so that a
	// large device reports progress and can be interrupted.
	discardChunkBytes = 1 << 30
	// progressInterval is how often a long pass logs its progress.
	progressInterval = 30 * time.Second
)

// filler fills a buffer with what one pass writes.
type filler func([]byte)

// zeroes leaves the buffer as it is: writePass allocates it zeroed.
func zeroes([]byte) {}

// randomFrom returns a filler that reads r.
func randomFrom(r io.Reader) filler {
	return func(b []byte) {
		// The readers in use (ChaCha8, crypto/rand) fill b completely and
		// never fail.
		_, _ = io.ReadFull(r, b)
	}
}

// writePass writes what fill produces over every span of dev, then flushes
// the device. label names the pass in logs and errors.
func writePass(ctx context.Context, dev Device, spans []span, fill filler, label string) error {
	logger := klog.FromContext(ctx)
	var total, done int64
	for _, s := range spans {
		total += s.len
	}
	buf := make([]byte, chunkBytes)
	start := time.Now()
	lastReport := start
	for _, s := range spans {
		for off := s.off; off < s.end(); {
			if err := ctx.Err(); err != nil {
				return fmt.Errorf("%s of %s stopped after %d of %d bytes: %w", label, dev.Name(), done, total, err)
			}
			n := min(int64(len(buf)), s.end()-off)
			fill(buf[:n])
			if _, err := dev.WriteAt(buf[:n], off); err != nil {
				return fmt.Errorf("%s: failed to write %s at offset %d: %w", label, dev.Name(), off, err)
			}
			off += n
			done += n
			if time.Since(lastReport) >= progressInterval {
				logger.Info("Pass in progress", "device", dev.Name(), "pass", label, "bytesDone", done, "bytesTotal", total)
				lastReport = time.Now()
			}
		}
	}
	if err := dev.Sync(); err != nil {
		return fmt.Errorf("%s: failed to flush %s: %w", label, dev.Name(), err)
	}
	logger.Info("Pass finished", "device", dev.Name(), "pass", label, "bytes", done, "duration", time.Since(start).Round(time.Millisecond))
	return nil
}

// discardAll discards the whole device in chunks. It returns
// ErrDiscardUnsupported, wrapped, when the device cannot discard.
func discardAll(ctx context.Context, dev Device) error {
	start := time.Now()
	size := dev.Size()
	for off := int64(0); off < size; off += discardChunkBytes {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("discard of %s stopped at offset %d of %d: %w", dev.Name(), off, size, err)
		}
		if err := dev.Discard(off, min(discardChunkBytes, size-off)); err != nil {
			return fmt.Errorf("failed to discard %s at offset %d: %w", dev.Name(), off, err)
		}
	}
	klog.FromContext(ctx).Info("Discarded device", "device", dev.Name(), "bytes", size, "duration", time.Since(start).Round(time.Millisecond))
	return nil
}

// Where quick_reset.sh writes zeroes. The first and last signatureSpan bytes
// hold the signatures of partition tables (MBR, GPT and its backup at the
// end), filesystems (ext*, XFS, Btrfs, F2FS, FAT, NTFS, ISO 9660, swap),
// LUKS, LVM, MD RAID (0.90 and 1.0 at the end, 1.1 and 1.2 at the start),
// bcache and ZFS (two labels at each end). Btrfs also keeps superblock
// copies at 64 MiB, 256 GiB and 1 PiB.
const signatureSpan = 4 << 20

var btrfsMirrors = []int64{64 << 20, 256 << 30, 1 << 50}

// signatureSpans returns the sorted, non-overlapping spans quick_reset.sh
// zeroes on a device of size bytes.
func signatureSpans(size int64) []span {
	if size <= 2*signatureSpan {
		return []span{{0, size}}
	}
	out := []span{{0, signatureSpan}}
	for _, m := range btrfsMirrors {
		if m < size-signatureSpan {
			out = append(out, span{m, min(chunkBytes, size-signatureSpan-m)})
		}
	}
	return append(out, span{size - signatureSpan, signatureSpan})
}
