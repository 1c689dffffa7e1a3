package cleanup

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/klog/v2/ktesting"

	"github.com/nodeplug/nodeplug/pkg/localpv/discovery"
	"github.com/nodeplug/nodeplug/pkg/localpv/identity"
	"github.com/nodeplug/nodeplug/pkg/localpv/jobs"
	"github.com/nodeplug/nodeplug/pkg/localpv/report"
	"github.com/nodeplug/nodeplug/pkg/localpv/testutil"
)

// realCleaner checks disk identities on this machine (no machine is
// recorded in these tests).
func realCleaner() Cleaner {
	return NewCleaner(&discovery.Scanner{}, &NodeChecker{}, discovery.SelfMountInfo, &bytes.Buffer{})
}

// TestCleanDirectoryChecksDisk: a volume whose mount now holds another file
// system than the PV's is not touched; its own is emptied.
func TestCleanDirectoryChecksDisk(t *testing.T) {
	testutil.RequireRoot(t)
	root := t.TempDir()
	vol, other := filepath.Join(root, "vol1"), filepath.Join(root, "vol2")
	testutil.MountTmpfs(t, vol, 1<<20)
	testutil.MountTmpfs(t, other, 1<<20)
	mustWrite(t, filepath.Join(vol, "data"), "tenant")
	own, err := identity.Directory(vol)
	if err != nil {
		t.Fatal(err)
	}
	another, err := identity.Directory(other)
	if err != nil {
		t.Fatal(err)
	}
	_, ctx := ktesting.NewTestContext(t)
	c := realCleaner()
	err = c.Clean(ctx, Request{Kind: report.KindDirectory, MountDir: root, Path: vol, Expected: Expected{DiskID: another}})
	var mm *MismatchError
	if !errors.As(err, &mm) || mm.What != jobs.CleanupMismatchDisk || mm.Recorded != string(another) || mm.Found != string(own) {
		t.Fatalf("want a disk mismatch (recorded %s, found %s), got %v", another, own, err)
	}
	if b, err := os.ReadFile(filepath.Join(vol, "data")); err != nil || string(b) != "tenant" {
		t.Fatalf("a mismatched volume was touched: %q, %v", b, err)
	}
	if err := c.Clean(ctx, Request{Kind: report.KindDirectory, MountDir: root, Path: vol, Expected: Expected{DiskID: own}}); err != nil {
		t.Fatalf("Clean of the PV's own disk: %v", err)
	}
	if entries, _ := os.ReadDir(vol); len(entries) != 0 {
		t.Fatalf("volume not emptied: %v", entries)
	}
}

// TestCleanBlockChecksDisk uses two real loop devices: the PV's disk is A;
// when its link leads to B, nothing is written to either; when it leads to
// A, A is wiped.
func TestCleanBlockChecksDisk(t *testing.T) {
	testutil.RequireRoot(t)
	const size = 1 << 20
	a, b := testutil.LoopDevice(t, size), testutil.LoopDevice(t, size)
	for dev, fill := range map[string]byte{a: 0xAA, b: 0xBB} {
		if err := os.WriteFile(dev, bytes.Repeat([]byte{fill}, size), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	idA, _, err := identity.Device("", a)
	if err != nil || !idA.Known() {
		t.Fatalf("identity of %s: %q, %v", a, idA, err)
	}
	root := t.TempDir()
	link := filepath.Join(root, "disk1")
	wipeCmd := []string{"dd", "if=/dev/zero", "of=$(LOCAL_PV_BLKDEVICE)", "bs=64k", "count=16", "conv=fsync"}
	req := Request{Kind: report.KindBlock, MountDir: root, Path: link, Command: wipeCmd, Expected: Expected{DiskID: idA}}
	_, ctx := ktesting.NewTestContext(t)

	if err := os.Symlink(b, link); err != nil {
		t.Fatal(err)
	}
	err = realCleaner().Clean(ctx, req)
	var mm *MismatchError
	if !errors.As(err, &mm) || mm.What != jobs.CleanupMismatchDisk || mm.Recorded != string(idA) {
		t.Fatalf("want a disk mismatch, got %v", err)
	}
	if !strings.HasPrefix(mm.TerminationMessage(), "identity-mismatch: disk: recorded "+string(idA)+", found loop:") {
		t.Errorf("termination message %q", mm.TerminationMessage())
	}
	wantFilled(t, b, 0xBB)
	wantFilled(t, a, 0xAA)

	if err := os.Remove(link); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(a, link); err != nil {
		t.Fatal(err)
	}
	if err := realCleaner().Clean(ctx, req); err != nil {
		t.Fatalf("Clean of the PV's own disk: %v", err)
	}
	wantFilled(t, a, 0)
	wantFilled(t, b, 0xBB)
}

// TestCleanChecksMachineFirst: on another machine nothing is looked at
// beyond the request, and no command runs.
func TestCleanChecksMachineFirst(t *testing.T) {
	root := t.TempDir()
	vol := filepath.Join(root, "vol1")
	mustWrite(t, filepath.Join(vol, "data"), "tenant")
	mismatch := &MismatchError{What: jobs.CleanupMismatchMachine, Recorded: "machine ID a", Found: "machine ID b"}
	_, ctx := ktesting.NewTestContext(t)
	for _, kind := range []report.VolumeKind{report.KindDirectory, report.KindBlock} {
		t.Run(string(kind), func(t *testing.T) {
			checker := &fakeChecker{MachineErr: mismatch}
			ran := filepath.Join(t.TempDir(), "ran")
			c := NewCleaner(&discovery.Scanner{}, checker, discovery.SelfMountInfo, &bytes.Buffer{})
			exp := Expected{MachineID: "a", DiskID: "wwn:naa.1"}
			err := c.Clean(ctx, Request{Kind: kind, MountDir: root, Path: vol, Command: []string{"touch", ran}, Expected: exp})
			if !errors.Is(err, error(mismatch)) {
				t.Fatalf("want the machine mismatch, got %v", err)
			}
			_, statErr := os.Stat(ran)
			if len(checker.Machines) != 1 || checker.Machines[0] != exp || len(checker.Disks) != 0 || statErr == nil {
				t.Errorf("checked machines %v, disks %v, command ran: %t", checker.Machines, checker.Disks, statErr == nil)
			}
		})
	}
	if b, err := os.ReadFile(filepath.Join(vol, "data")); err != nil || string(b) != "tenant" {
		t.Fatalf("volume touched: %q, %v", b, err)
	}
}

func wantFilled(t *testing.T, dev string, fill byte) {
	t.Helper()
	got, err := os.ReadFile(dev)
	if err != nil {
		t.Fatal(err)
	}
	if want := bytes.Repeat([]byte{fill}, len(got)); !bytes.Equal(got, want) {
		t.Errorf("%s does not read all %#x", dev, fill)
	}
}
