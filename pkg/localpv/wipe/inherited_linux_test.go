package wipe

import (
	"bytes"
	"fmt"
	"os"
	"testing"

	"golang.org/x/sys/unix"
	"k8s.io/klog/v2/ktesting"

	"github.com/nodeplug/nodeplug/pkg/localpv/testutil"
	utiltestutil "github.com/nodeplug/nodeplug/pkg/util/testutil"
)

// passFD duplicates f's descriptor, as a process hands it to a child, and
// returns the duplicate's /proc/self/fd path. The program closes the
// duplicate; the test's f stays open.
func passFD(t *testing.T, f *os.File) string {
	t.Helper()
	fd, err := unix.FcntlInt(f.Fd(), unix.F_DUPFD_CLOEXEC, 3)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("/proc/self/fd/%d", fd)
}

// TestProgramsWipeTheInheritedDescriptor (N6): the cleanup Job passes the
// device it checked as /proc/self/fd/N. A program writes through that
// descriptor, and wipes the device that was opened.
func TestProgramsWipeTheInheritedDescriptor(t *testing.T) {
	utiltestutil.RequireRoot(t)
	for _, program := range []string{DDZero, QuickReset, Shred} {
		t.Run(program, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			dev := testutil.LoopDevice(t, loopBytes)
			writeMarker(t, dev)
			held, err := os.OpenFile(dev, os.O_RDWR, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = held.Close() }()
			r := newRunner()
			r.getenv = mapEnv(map[string]string{BlockDeviceVariable: passFD(t, held)})
			var stderr bytes.Buffer
			args := []string{}
			if program == Shred {
				args = []string{"1"}
			}
			checkExit(t, r.main(ctx, program, args, &stderr), stderr.String(), "")
			_ = held.Close()
			checkContents(t, dev, nil)
		})
	}
}

// TestOpenInheritedDescriptorRefuses: a passed descriptor must be a block
// device open for writing; a path that only looks like one is resolved as
// a path.
func TestOpenInheritedDescriptorRefuses(t *testing.T) {
	utiltestutil.RequireRoot(t)
	dev := testutil.LoopDevice(t, 1<<20)
	readOnly, err := os.Open(dev)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = readOnly.Close() }()
	file, err := os.Create(t.TempDir() + "/file")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = file.Close() }()
	busy := testutil.LoopDevice(t, 1<<20)
	passed, err := os.OpenFile(busy, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = passed.Close() }()
	other, err := os.OpenFile(busy, os.O_RDONLY|unix.O_EXCL, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = other.Close() }()
	tests := []struct {
		name, path, wantErr string
	}{
		{name: "read-only descriptor", path: passFD(t, readOnly), wantErr: "the descriptor is not open for writing"},
		{name: "regular file", path: passFD(t, file), wantErr: "not a block device"},
		{name: "device held exclusively by another", path: passFD(t, passed), wantErr: "it is in use"},
		{name: "closed descriptor", path: "/proc/self/fd/987", wantErr: "not an open descriptor"},
		{name: "standard input is not a passed device", path: "/proc/self/fd/0", wantErr: "refusing to wipe /proc/self/fd/0"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d, err := OpenBlockDevice(tc.path)
			if err == nil {
				_ = d.Close()
				t.Fatalf("opened %s, want %q", tc.path, tc.wantErr)
			}
			if !bytes.Contains([]byte(err.Error()), []byte(tc.wantErr)) {
				t.Errorf("error %q, want %q", err, tc.wantErr)
			}
		})
	}
}

func TestInheritedFD(t *testing.T) {
	for _, tc := range []struct {
		path string
		fd   int
		ok   bool
	}{
		{"/proc/self/fd/3", 3, true},
		{"/dev/fd/7", 7, true},
		{"/proc/self/fd/2", 0, false},
		{"/proc/self/fd/03", 0, false},
		{"/proc/self/fd/3/x", 0, false},
		{"/dev/sdb", 0, false},
		{"/proc/1/fd/3", 0, false},
	} {
		t.Run(tc.path, func(t *testing.T) {
			fd, ok := InheritedFD(tc.path)
			if ok != tc.ok || (ok && fd != tc.fd) {
				t.Errorf("InheritedFD(%q) = %d, %t; want %d, %t", tc.path, fd, ok, tc.fd, tc.ok)
			}
		})
	}
}
