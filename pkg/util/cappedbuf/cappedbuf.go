package cappedbuf

import (
	"errors"
	"io"
	"sync"
)

// WhenFull says what a Buffer does with the bytes written past its cap.
type WhenFull int

const (
	// Fail: the write that crosses the cap keeps what fits and returns
	// ErrFull, and every later write returns ErrFull at once. As a
	// command's stdout in os/exec, this ends the copy from the command's
	// pipe and closes it, so a command that keeps writing gets SIGPIPE
	// instead of filling memory.
	Fail WhenFull = iota
	// Discard: writes past the cap succeed and their bytes are dropped, so
	// that a stream that must be read to its end (pods/exec, CRI exec)
	// never blocks or fails because of its output's size.
	Discard
)

// ErrFull is what a Fail Buffer's writes return once its cap is reached.
var ErrFull = errors.New("output exceeds its size limit")

// Buffer keeps the first bytes written to it, up to the limit given to
// New. It is safe for concurrent use; a command's stdout and stderr need
// one Buffer each.
type Buffer struct {
	mu        sync.Mutex
	buf       []byte
	max       int
	whenFull  WhenFull
	truncated bool
}

var (
	_ io.Writer     = &Buffer{}
	_ io.ReaderFrom = &Buffer{}
)

// New returns an empty Buffer that keeps at most limit bytes (none if limit
// is 0 or less) and treats the bytes past them as whenFull says.
func New(limit int, whenFull WhenFull) *Buffer {
	return &Buffer{max: max(limit, 0), whenFull: whenFull}
}

// Write keeps what fits of p. Past the cap it returns ErrFull with the
// count of bytes kept (Fail), or len(p) and no error (Discard).
func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.truncated && b.whenFull == Fail {
		return 0, ErrFull
	}
	room := b.max - len(b.buf)
	if len(p) <= room {
		b.buf = append(b.buf, p...)
		return len(p), nil
	}
	b.buf = append(b.buf, p[:room]...)
	b.truncated = true
	if b.whenFull == Fail {
		return room, ErrFull
	}
	return len(p), nil
}

// ReadFrom reads r until EOF or, for a Fail Buffer, until the cap is
// crossed (ErrFull). It lets io.Copy, and so os/exec, fill the Buffer
// without a 32 KiB copy buffer of its own. Like Write, it counts the bytes
// kept (Fail) or read (Discard).
func (b *Buffer) ReadFrom(r io.Reader) (int64, error) {
	chunk := make([]byte, 4096)
	var total int64
	for {
		n, err := r.Read(chunk)
		if n > 0 {
			w, werr := b.Write(chunk[:n])
			total += int64(w)
			if werr != nil {
				return total, werr
			}
		}
		if errors.Is(err, io.EOF) {
			return total, nil
		}
		if err != nil {
			return total, err
		}
	}
}

// Bytes returns a copy of the bytes kept.
func (b *Buffer) Bytes() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]byte(nil), b.buf...)
}

// Truncated reports whether bytes past the cap were written, and so
// refused or dropped.
func (b *Buffer) Truncated() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.truncated
}
