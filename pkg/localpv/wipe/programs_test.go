package wipe

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"testing"

	"k8s.io/klog/v2/ktesting"
)

func TestMainRefusesBadInvocations(t *testing.T) {
	env := map[string]string{BlockDeviceVariable: "/dev/fake"}
	tests := []struct {
		name, program string
		args          []string
		env           map[string]string
		openErr       error
		wantCode      int
		wantStderr    string
	}{
		{name: "unknown program", program: "wipe.sh", env: env, wantCode: 2, wantStderr: "wipe.sh: not a cleaner program; the programs are blkdiscard.sh, dd_zero.sh, fsclean.sh, quick_reset.sh, shred.sh"},
		{name: "help", program: Shred, args: []string{"-h"}, env: env, wantCode: 0, wantStderr: "usage: shred.sh [PASSES]: overwrite"},
		{name: "pass count not a number", program: Shred, args: []string{"two"}, env: env, wantCode: 2, wantStderr: `shred.sh: the pass count must be a number from 0 to 100, not "two"`},
		{name: "negative pass count", program: Shred, args: []string{"-1"}, env: env, wantCode: 2, wantStderr: `not "-1"`},
		{name: "pass count too large", program: Shred, args: []string{"101"}, env: env, wantCode: 2, wantStderr: `not "101"`},
		{name: "two pass counts", program: Shred, args: []string{"1", "2"}, env: env, wantCode: 2, wantStderr: `shred.sh: too many arguments: ["1" "2"]`},
		{name: "dd_zero needs at least one pass", program: DDZero, args: []string{"0"}, env: env, wantCode: 2, wantStderr: `from 1 to 100, not "0"`},
		{name: "blkdiscard takes no arguments", program: BlkDiscard, args: []string{"-v"}, env: env, wantCode: 2, wantStderr: `blkdiscard.sh: takes no arguments, got ["-v"]`},
		{name: "quick_reset takes no arguments", program: QuickReset, args: []string{"/dev/sda"}, env: env, wantCode: 2, wantStderr: "usage: quick_reset.sh"},
		{name: "fsclean takes no arguments", program: FSClean, args: []string{"/mnt"}, env: env, wantCode: 2, wantStderr: "usage: fsclean.sh"},
		{name: "device variable missing", program: Shred, args: []string{"2"}, wantCode: 1, wantStderr: "shred.sh: LOCAL_PV_BLKDEVICE is not set: it names the block device to wipe"},
		{name: "device variable missing for quick_reset", program: QuickReset, wantCode: 1, wantStderr: "quick_reset.sh: LOCAL_PV_BLKDEVICE is not set"},
		{name: "directory variable missing", program: FSClean, wantCode: 1, wantStderr: "fsclean.sh: LOCAL_PV_FILESYSTEM is not set: it names the directory to empty"},
		{name: "device refused", program: DDZero, env: env, openErr: errors.New("refusing to wipe /dev/fake: not a block device (mode -rw-r--r--)"),
			wantCode: 1, wantStderr: "dd_zero.sh: refusing to wipe /dev/fake: not a block device"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			r := &runner{getenv: mapEnv(tc.env), random: seeded, mountInfo: "/nonexistent",
				open: func(string) (Device, error) {
					if tc.openErr != nil {
						return nil, tc.openErr
					}
					return newMemDevice(1<<20, true), nil
				}}
			var stderr bytes.Buffer
			if code := r.main(ctx, tc.program, tc.args, &stderr); code != tc.wantCode {
				t.Errorf("exit code %d, want %d; stderr: %s", code, tc.wantCode, stderr.String())
			}
			if !strings.Contains(stderr.String(), tc.wantStderr) {
				t.Errorf("stderr %q does not contain %q", stderr.String(), tc.wantStderr)
			}
		})
	}
}

func TestBlockPrograms(t *testing.T) {
	const size = 10 << 20
	tests := []struct {
		name    string
		program string
		args    []string
		discard bool
		// wantPasses describes each flushed pass: "random" or "zero".
		wantPasses    []string
		wantDiscarded int64
		// wantKept are spans that must still hold the old data.
		wantKept []span
		wantErr  string
	}{
		{name: "shred 2: two random passes, then zeroes", program: Shred, args: []string{"2"}, wantPasses: []string{"random", "random", "zero"}},
		{name: "shred without a count makes three random passes", program: Shred, wantPasses: []string{"random", "random", "random", "zero"}},
		{name: "shred 0 only zeroes", program: Shred, args: []string{"0"}, wantPasses: []string{"zero"}},
		{name: "dd_zero zeroes once", program: DDZero, wantPasses: []string{"zero"}},
		{name: "dd_zero 2 zeroes twice", program: DDZero, args: []string{"2"}, wantPasses: []string{"zero", "zero"}},
		{name: "blkdiscard discards everything", program: BlkDiscard, discard: true, wantDiscarded: size},
		{name: "blkdiscard without discard support fails and writes nothing", program: BlkDiscard,
			wantKept: []span{{0, size}}, wantErr: "does not support discard (BLKDISCARD: unsupported operation); wipe this device with /scripts/shred.sh or /scripts/dd_zero.sh instead"},
		{name: "quick_reset discards, then zeroes the signature regions", program: QuickReset, discard: true, wantDiscarded: size,
			wantPasses: []string{"signatures"}},
		{name: "quick_reset without discard support zeroes the signature regions only", program: QuickReset,
			wantPasses: []string{"signatures"}, wantKept: []span{{signatureSpan, size - 2*signatureSpan}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			dev := newMemDevice(size, tc.discard)
			old := bytes.Clone(dev.data)
			r := &runner{getenv: mapEnv(map[string]string{BlockDeviceVariable: "/dev/fake"}), random: seeded,
				open: func(p string) (Device, error) { dev.name = p; return dev, nil }}
			var stderr bytes.Buffer
			checkExit(t, r.main(ctx, tc.program, tc.args, &stderr), stderr.String(), tc.wantErr)
			if !dev.closed {
				t.Error("the device was not closed")
			}
			if got := dev.passKinds(); strings.Join(got, ",") != strings.Join(tc.wantPasses, ",") {
				t.Errorf("passes %q, want %q", got, tc.wantPasses)
			}
			if dev.discarded != tc.wantDiscarded {
				t.Errorf("discarded %d bytes, want %d", dev.discarded, tc.wantDiscarded)
			}
			for _, k := range tc.wantKept {
				if !bytes.Equal(dev.data[k.off:k.end()], old[k.off:k.end()]) {
					t.Errorf("bytes %d-%d changed, want them kept", k.off, k.end())
				}
			}
			if tc.wantErr == "" && tc.wantKept == nil && !allZero(dev.data) {
				t.Error("the device is not all zeroes at the end")
			}
		})
	}
}

func TestRandomPassesDiffer(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	dev := newMemDevice(3<<20, false)
	r := &runner{getenv: mapEnv(map[string]string{BlockDeviceVariable: "/dev/fake"}), random: newRandom,
		open: func(string) (Device, error) { return dev, nil }}
	if code := r.main(ctx, Shred, []string{"2"}, io.Discard); code != 0 {
		t.Fatalf("exit code %d", code)
	}
	if len(dev.passes) != 3 || dev.passes[0].sum == dev.passes[1].sum {
		t.Errorf("the two random passes wrote the same data: %+v", dev.passes)
	}
}

func TestWritePassStopsWhenCancelled(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	cancel()
	dev := newMemDevice(4<<20, false)
	err := writePass(ctx, dev, whole(dev), zeroes, "zero pass")
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "zero pass of /dev/mem stopped after 0 of 4194304 bytes") {
		t.Errorf("error %v, want the cancellation with the pass and progress", err)
	}
	if len(dev.passes) != 0 || len(dev.written) != 0 {
		t.Error("a cancelled pass wrote or flushed")
	}
}

func TestSignatureSpans(t *testing.T) {
	const mi, gi = int64(1 << 20), int64(1 << 30)
	tests := []struct {
		name string
		size int64
		want []span
	}{
		{name: "small device: all of it", size: 3 * mi, want: []span{{0, 3 * mi}}},
		{name: "two signature spans exactly", size: 8 * mi, want: []span{{0, 8 * mi}}},
		{name: "start and end", size: 9 * mi, want: []span{{0, 4 * mi}, {5 * mi, 4 * mi}}},
		{name: "first Btrfs mirror", size: 100 * mi, want: []span{{0, 4 * mi}, {64 * mi, mi}, {96 * mi, 4 * mi}}},
		{name: "Btrfs mirror just before the end span", size: 68*mi + mi/2,
			want: []span{{0, 4 * mi}, {64 * mi, mi / 2}, {64*mi + mi/2, 4 * mi}}},
		{name: "Btrfs mirror inside the end span", size: 66 * mi, want: []span{{0, 4 * mi}, {62 * mi, 4 * mi}}},
		{name: "two Btrfs mirrors", size: 300 * gi,
			want: []span{{0, 4 * mi}, {64 * mi, mi}, {256 * gi, mi}, {300*gi - 4*mi, 4 * mi}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := signatureSpans(tc.size); fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("signatureSpans(%d) = %v, want %v", tc.size, got, tc.want)
			}
		})
	}
}

// memDevice is a Device in memory that records each flushed pass.
type memDevice struct {
	name      string
	data      []byte
	discard   bool
	discarded int64
	written   map[int64]bool
	passes    []pass
	closed    bool
}

// pass is what one pass wrote: how many bytes, whether they were all
// zeroes, whether they covered the whole device, and their SHA-256.
type pass struct {
	bytes      int64
	zero, full bool
	sum        [32]byte
}

func newMemDevice(size int64, discard bool) *memDevice {
	d := &memDevice{name: "/dev/mem", data: bytes.Repeat([]byte("old tenant data "), int(size/16)), discard: discard}
	d.written = map[int64]bool{}
	return d
}

func (d *memDevice) Name() string { return d.name }
func (d *memDevice) Size() int64  { return int64(len(d.data)) }
func (d *memDevice) Close() error { d.closed = true; return nil }

func (d *memDevice) WriteAt(b []byte, off int64) (int, error) {
	if off+int64(len(b)) > d.Size() {
		return 0, fmt.Errorf("write past the end")
	}
	d.written[off] = true
	return copy(d.data[off:], b), nil
}

func (d *memDevice) Discard(off, n int64) error {
	if !d.discard {
		return fmt.Errorf("%w (BLKDISCARD: %w)", ErrDiscardUnsupported, errors.ErrUnsupported)
	}
	clear(d.data[off : off+n])
	d.discarded += n
	return nil
}

// Sync records what the pass since the previous Sync wrote.
func (d *memDevice) Sync() error {
	var p pass
	zero := true
	h := sha256.New()
	for _, off := range slices.Sorted(maps.Keys(d.written)) {
		chunk := d.data[off:min(off+chunkBytes, d.Size())]
		p.bytes += int64(len(chunk))
		zero = zero && allZero(chunk)
		h.Write(chunk)
	}
	p.zero, p.full = zero, p.bytes == d.Size()
	copy(p.sum[:], h.Sum(nil))
	d.passes = append(d.passes, p)
	d.written = map[int64]bool{}
	return nil
}

// passKinds names each pass: "zero" or "random" over the whole device,
// "signatures" for a partial pass of zeroes.
func (d *memDevice) passKinds() []string {
	var out []string
	for _, p := range d.passes {
		switch {
		case p.full && p.zero:
			out = append(out, "zero")
		case p.full:
			out = append(out, "random")
		case p.zero:
			out = append(out, "signatures")
		default:
			out = append(out, "partial non-zero")
		}
	}
	return out
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// checkExit fails t unless a program exited with 0 and wantErr is empty,
// or with 1 and a message containing wantErr.
func checkExit(t *testing.T, code int, stderr, wantErr string) {
	t.Helper()
	switch {
	case wantErr == "" && code != 0:
		t.Fatalf("exit code %d: %s", code, stderr)
	case wantErr != "" && (code != 1 || !strings.Contains(stderr, wantErr)):
		t.Fatalf("exit code %d, stderr %q; want 1 and %q", code, stderr, wantErr)
	}
}

func mapEnv(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

// seeded stands in for the random stream: it repeats one non-zero byte.
func seeded() io.Reader { return constReader(0x5a) }

type constReader byte

func (c constReader) Read(b []byte) (int, error) {
	for i := range b {
		b[i] = byte(c)
	}
	return len(b), nil
}
