//go:build linux

package identity

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// clonedImages makes an ext4 image with UUID u that holds etc/machine-id
// and a baked directory vol, as a VM image does, and a copy of it, as a VM
// cloned from the image has; each is mounted, and each machine gets its own
// machine ID at first boot (machineA, machineB). It returns both mounts.
func clonedImages(t *testing.T, u string) (string, string) {
	t.Helper()
	a := mountLoopFS(t, "ext4", "-q", "-U", u)
	for _, d := range []string{"etc", "vol"} {
		if err := os.Mkdir(filepath.Join(a.dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := unix.Unmount(a.dir, 0); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(a.img)
	if err != nil {
		t.Fatal(err)
	}
	imgB, dirB := filepath.Join(t.TempDir(), "clone.img"), filepath.Join(t.TempDir(), "mnt")
	if err := os.WriteFile(imgB, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(dirB, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount(a.dev, a.dir, "ext4", 0, ""); err != nil {
		t.Fatal(err)
	}
	mountImage(t, "ext4", imgB, dirB)
	for dir, id := range map[string]string{a.dir: machineA, dirB: machineB + "\n"} {
		if err := os.WriteFile(filepath.Join(dir, "etc", "machine-id"), []byte(id), 0o444); err != nil {
			t.Fatal(err)
		}
	}
	return a.dir, dirB
}

// useMachineID makes p the host's machine-id file for the rest of the test.
func useMachineID(t *testing.T, p string) {
	old := machineIDPaths
	machineIDPaths = []string{filepath.Join(t.TempDir(), "missing"), p}
	t.Cleanup(func() { machineIDPaths = old })
}

// TestDirectoryOnTheOSFileSystem: a directory baked into a VM image has the
// same file system UUID and file handle on every machine cloned from the
// image. On the file system that holds the machine's /etc/machine-id it
// gets osfs, bound to its machine and weak: two clones' directories compare
// Different and never prove one disk, whatever source gives the UUID. A
// directory on another file system keeps fs, and a PV that recorded fs for
// a directory on the OS's file system still reads it in that form.
func TestDirectoryOnTheOSFileSystem(t *testing.T) {
	const u = "5d1e7c3a-9b2f-4a6e-8c0d-1f2e3a4b5c6d"
	a, b := clonedImages(t, u)
	other := mountLoopFS(t, "ext4", "-q", "-U", "0b6c3f9e-1d2a-4c5b-9e8f-7a6b5c4d3e21")
	h := handleOfPath(t, filepath.Join(a, "vol"))
	if hb := handleOfPath(t, filepath.Join(b, "vol")); string(hb.Bytes()) != string(h.Bytes()) {
		t.Fatalf("a clone's baked directory has another handle: %x, %x", h.Bytes(), hb.Bytes())
	}
	for _, tc := range sourceCases[:4] {
		t.Run(tc.name, func(t *testing.T) {
			defer SetUnavailable(tc.off)()
			read := func(machine, dir string, recorded ID) ID {
				t.Helper()
				useMachineID(t, filepath.Join(machine, "etc", "machine-id"))
				id, err := DirectoryAs(dir, recorded)
				if err != nil {
					t.Fatal(err)
				}
				if err := id.Valid(); err != nil {
					t.Fatal(err)
				}
				return id
			}
			onA, onB := read(a, filepath.Join(a, "vol"), ""), read(b, filepath.Join(b, "vol"), "")
			if want := OSFS(u, h.Type(), h.Bytes(), machineA); onA != want {
				t.Errorf("baked directory on machine A = %q, want %q", onA, want)
			}
			if want := OSFS(u, h.Type(), h.Bytes(), machineB); onB != want {
				t.Errorf("baked directory on machine B = %q, want %q", onB, want)
			}
			if Compare(onA, onB) != Different || SameDisk(onA, onB) || onA.Strong() {
				t.Errorf("two clones' baked directories: compare %v, same disk %v, strong %v", Compare(onA, onB), SameDisk(onA, onB), onA.Strong())
			}
			if got := read(a, other.dir, ""); got.Kind() != KindFS {
				t.Errorf("a directory on another file system than the OS's = %q, want fs", got)
			}
			legacy := FS(u, h.Type(), h.Bytes())
			if got := read(a, filepath.Join(a, "vol"), legacy); got != legacy {
				t.Errorf("read as its legacy record = %q, want %q", got, legacy)
			}
			if got := read(filepath.Join(a, "nowhere"), filepath.Join(a, "vol"), ""); got != legacy {
				t.Errorf("without a machine-id file = %q, want %q", got, legacy)
			}
			if got := read(filepath.Join(a, "nowhere"), other.dir, onA); got.Kind() != KindFS {
				t.Errorf("another file system read for a machine-bound record = %q, want fs", got)
			}
			useMachineID(t, filepath.Join(a, "nowhere"))
			if got, err := DirectoryAs(filepath.Join(a, "vol"), onA); err == nil {
				t.Errorf("the record's directory without a machine-id file = %q, want an error: its machine is not read", got)
			}
		})
	}
}

// TestOSFileSystem decides which file system is the OS's by the machine-id
// file given, and reads the machine ID from it.
func TestOSFileSystem(t *testing.T) {
	const u = "5d1e7c3a-9b2f-4a6e-8c0d-1f2e3a4b5c6d"
	a, _ := clonedImages(t, u)
	if err := os.WriteFile(filepath.Join(a, "etc", "empty"), nil, 0o444); err != nil {
		t.Fatal(err)
	}
	var st, tmp unix.Stat_t
	if err := unix.Stat(a, &st); err != nil {
		t.Fatal(err)
	}
	if err := unix.Stat(t.TempDir(), &tmp); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, path string
		dev        uint64
		uuid       string
		wantOS     bool
		wantID     string
	}{
		{name: "the file system with the machine-id file", path: "etc/machine-id", dev: st.Dev, wantOS: true, wantID: machineA},
		{name: "an image not yet booted", path: "etc/empty", dev: st.Dev, wantOS: true},
		{name: "another file system", path: "etc/machine-id", dev: tmp.Dev, uuid: "0b6c3f9e-1d2a-4c5b-9e8f-7a6b5c4d3e21"},
		{name: "no machine-id file", path: "etc/none", dev: st.Dev},
		{name: "a directory, not a file", path: "etc", dev: st.Dev},
	} {
		t.Run(tc.name, func(t *testing.T) {
			uuid := u
			if tc.uuid != "" {
				uuid = tc.uuid
			}
			id, onOS := OSFileSystem(tc.dev, uuid, filepath.Join(a, tc.path))
			if onOS != tc.wantOS || id != tc.wantID {
				t.Errorf("OSFileSystem = %q, %v; want %q, %v", id, onOS, tc.wantID, tc.wantOS)
			}
		})
	}
}

// TestDirectoryAsRecordedForm: discovery runs unprivileged and, on ext4
// before Linux 6.0 without a udev record, reads no UUID, so it records the
// file handle with the device's identity (fhdisk); the kubelet, root,
// reads the UUID from the superblock. Read in the recorded form, the
// kubelet computes what discovery did, so the same disk is Same, and
// another disk, read in that form, is still Different.
func TestDirectoryAsRecordedForm(t *testing.T) {
	const discovery = SourceGenericIoctl | SourceFSIoctl | SourceSuperblock | SourceUdev
	const kubelet = SourceGenericIoctl | SourceFSIoctl
	a := mountLoopFS(t, "ext4", "-q", "-U", "6a0f1c2e-3b4d-4e5f-8a9b-0c1d2e3f4a5b")
	b := mountLoopFS(t, "ext4", "-q", "-U", "9c2d0d6e-6a3b-4a0b-8f35-1f1a0b3c4d5e")
	read := func(off Source, dir string, recorded ID) ID {
		t.Helper()
		defer SetUnavailable(off)()
		id, err := DirectoryAs(dir, recorded)
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	recorded := read(discovery, a.dir, "")
	if recorded.Kind() != KindFileHandleOnDisk {
		t.Fatalf("discovery without the superblock recorded %q, want fhdisk", recorded)
	}
	local := LocalFileHandle(0, 1, 1, rootHandle)
	for _, tc := range []struct {
		name     string
		recorded ID
		dir      string
		want     Match
	}{
		{name: "the disk discovery recorded", recorded: recorded, dir: a.dir, want: Same},
		{name: "another disk at the path", recorded: recorded, dir: b.dir, want: Different},
		{name: "a record by device number, the same file system", recorded: read(discovery, a.dir, local), dir: a.dir, want: Same},
		{name: "a record by device number, another file system", recorded: read(discovery, a.dir, local), dir: b.dir, want: Different},
		{name: "a record by UUID", recorded: read(0, a.dir, ""), dir: a.dir, want: Same},
		{name: "a record by UUID, another disk", recorded: read(0, a.dir, ""), dir: b.dir, want: Different},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := read(kubelet, tc.dir, tc.recorded)
			if m := Compare(tc.recorded, got); m != tc.want {
				t.Errorf("kubelet read %q against the record %q: %v, want %v", got, tc.recorded, m, tc.want)
			}
		})
	}
	if plain := read(kubelet, a.dir, ""); Compare(recorded, plain) == Same {
		t.Errorf("the kubelet's own form %q compares Same with discovery's %q", plain, recorded)
	}
}
