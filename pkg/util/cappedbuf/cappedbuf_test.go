package cappedbuf

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"
	"testing/iotest"
)

// write is one Write and what it must return.
type write struct {
	p       string
	wantN   int
	wantErr error
}

func TestWrite(t *testing.T) {
	tests := []struct {
		name          string
		limit         int
		whenFull      WhenFull
		writes        []write
		wantKept      string
		wantTruncated bool
	}{
		{name: "under the cap", limit: 8, whenFull: Fail,
			writes: []write{{"abc", 3, nil}, {"de", 2, nil}}, wantKept: "abcde"},
		{name: "exactly the cap", limit: 5, whenFull: Fail,
			writes: []write{{"abc", 3, nil}, {"de", 2, nil}}, wantKept: "abcde"},
		{name: "empty write at the cap", limit: 3, whenFull: Fail,
			writes: []write{{"abc", 3, nil}, {"", 0, nil}}, wantKept: "abc"},
		{name: "fail: the crossing write keeps what fits", limit: 4, whenFull: Fail,
			writes: []write{{"abc", 3, nil}, {"def", 1, ErrFull}}, wantKept: "abcd", wantTruncated: true},
		{name: "fail: later writes refused at once", limit: 4, whenFull: Fail,
			writes: []write{{"abcdef", 4, ErrFull}, {"g", 0, ErrFull}, {"", 0, ErrFull}}, wantKept: "abcd", wantTruncated: true},
		{name: "discard: the crossing write succeeds", limit: 4, whenFull: Discard,
			writes: []write{{"abc", 3, nil}, {"def", 3, nil}}, wantKept: "abcd", wantTruncated: true},
		{name: "discard: later writes succeed and are dropped", limit: 4, whenFull: Discard,
			writes: []write{{"abcdef", 6, nil}, {"g", 1, nil}}, wantKept: "abcd", wantTruncated: true},
		{name: "zero cap, fail", limit: 0, whenFull: Fail,
			writes: []write{{"a", 0, ErrFull}}, wantKept: "", wantTruncated: true},
		{name: "negative cap is zero", limit: -1, whenFull: Discard,
			writes: []write{{"a", 1, nil}}, wantKept: "", wantTruncated: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := New(tc.limit, tc.whenFull)
			for i, w := range tc.writes {
				n, err := b.Write([]byte(w.p))
				if n != w.wantN || !errors.Is(err, w.wantErr) {
					t.Errorf("write %d (%q) = %d, %v; want %d, %v", i, w.p, n, err, w.wantN, w.wantErr)
				}
			}
			if got := string(b.Bytes()); got != tc.wantKept {
				t.Errorf("kept %q, want %q", got, tc.wantKept)
			}
			if b.Truncated() != tc.wantTruncated {
				t.Errorf("Truncated() = %v, want %v", b.Truncated(), tc.wantTruncated)
			}
		})
	}
}

func TestReadFrom(t *testing.T) {
	tests := []struct {
		name     string
		limit    int
		whenFull WhenFull
		src      io.Reader
		wantN    int64
		wantErr  error
		wantKept string
	}{
		{name: "all of a short source", limit: 10, whenFull: Fail, src: strings.NewReader("hello"),
			wantN: 5, wantKept: "hello"},
		{name: "fail stops at the cap", limit: 5000, whenFull: Fail, src: strings.NewReader(strings.Repeat("x", 9000)),
			wantN: 5000, wantErr: ErrFull, wantKept: strings.Repeat("x", 5000)},
		{name: "discard reads to the end", limit: 5000, whenFull: Discard, src: strings.NewReader(strings.Repeat("x", 9000)),
			wantN: 9000, wantKept: strings.Repeat("x", 5000)},
		{name: "a read error is returned", limit: 10, whenFull: Discard, src: iotest.TimeoutReader(strings.NewReader("ab")),
			wantN: 2, wantErr: iotest.ErrTimeout, wantKept: "ab"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := New(tc.limit, tc.whenFull)
			n, err := io.Copy(b, tc.src) // uses ReadFrom
			if n != tc.wantN || !errors.Is(err, tc.wantErr) {
				t.Errorf("io.Copy = %d, %v; want %d, %v", n, err, tc.wantN, tc.wantErr)
			}
			if got := string(b.Bytes()); got != tc.wantKept {
				t.Errorf("kept %d bytes, want %d", len(got), len(tc.wantKept))
			}
		})
	}
}

// TestBytesIsACopy: what Bytes returned does not change with later writes,
// and changing it does not change the Buffer.
func TestBytesIsACopy(t *testing.T) {
	b := New(10, Discard)
	_, _ = b.Write([]byte("ab"))
	got := b.Bytes()
	got[0] = 'z'
	_, _ = b.Write([]byte("cd"))
	if string(got) != "zb" || string(b.Bytes()) != "abcd" {
		t.Fatalf("Bytes() = %q then %q, want %q and %q", got, b.Bytes(), "zb", "abcd")
	}
}

// TestConcurrentWrites: writers never push the Buffer past its cap (run
// with -race).
func TestConcurrentWrites(t *testing.T) {
	b := New(1000, Discard)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 100 {
				_, _ = b.Write(bytes.Repeat([]byte("y"), 7))
			}
		})
	}
	wg.Wait()
	if len(b.Bytes()) != 1000 || !b.Truncated() {
		t.Fatalf("kept %d bytes, truncated %v; want 1000, true", len(b.Bytes()), b.Truncated())
	}
}
