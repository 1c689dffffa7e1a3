package identity

import (
	"encoding/hex"
	"fmt"
	"net/url"
	"strconv"
	"strings"
)

// ID is a disk identity; the empty ID is unknown.
type ID string

// Kinds of identity.
const (
	// KindWWN is a world wide name, NVMe EUI-64 or NGUID as the kernel's
	// wwid attribute gives it (naa., eui., nguid.).
	KindWWN = "wwn"
	// KindSerial is a disk's serial number with its model and size.
	KindSerial = "serial"
	// KindFS is a directory: its file system's UUID and its file handle.
	KindFS = "fs"
	// KindLoop is a loop device: its backing file, offset and size limit.
	KindLoop = "loop"
	// KindFileHandle is the legacy identity of a directory on a file system
	// whose UUID was not read: its file handle alone. It is no longer
	// produced, because the root of every ext4 file system has one handle;
	// it compares Unknown with everything, itself included.
	KindFileHandle = "fh"
	// KindFileHandleOnDisk is a directory on a block device's file system
	// that has no UUID: its file handle and its device's identity. It is as
	// strong as the device's identity.
	KindFileHandleOnDisk = "fhdisk"
	// KindLocalFileHandle is a directory on a file system with neither a
	// UUID nor a device identity (tmpfs, overlay, a disk that reports
	// none): its device number and file handle. It is weak, and holds only
	// while the file system stays mounted.
	KindLocalFileHandle = "fhdev"
	// KindNVMe is an NVMe namespace whose kernel wwid is not a WWN or EUI:
	// its controller's model and serial, its size, and the namespace's
	// UUID or number (and, for a placeholder serial, the controller's
	// address on its bus).
	KindNVMe = "nvme"
	// KindOSFS is a directory on the file system of its machine's OS (the
	// one that holds /etc/machine-id): the file system's UUID, the file
	// handle and the machine's ID. A cloned VM image carries one UUID and
	// one handle on every machine made from it, so the identity is bound to
	// its machine and weak.
	KindOSFS = "osfs"
)

// MaxLength bounds an identity; longer ones are refused by Valid.
const MaxLength = 512

// WWN returns the identity of a disk with a world wide name.
func WWN(wwid string) ID { return ID(KindWWN + ":" + esc(wwid)) }

// WWNSerial returns the identity of a disk by its world wide name and its
// serial number together: arrays give several LUNs one WWN, and only the
// serial tells them apart. Against an identity by the WWN alone (as older
// releases recorded it) it compares Same when the WWNs are equal.
func WWNSerial(wwid, serial string) ID {
	return ID(KindWWN + ":" + esc(wwid) + ":" + escField(serial))
}

// wwnFields splits a wwn identity's rest into its WWN and serial.
func wwnFields(rest string) (string, string) {
	w, s, _ := strings.Cut(rest, ":")
	return unesc(w), unesc(s)
}

// Serial returns the identity of a disk by its serial number, model and size.
func Serial(model, serial string, size int64) ID {
	return ID(KindSerial + ":" + esc(model) + ":" + esc(serial) + ":" + strconv.FormatInt(size, 10))
}

// FS returns the identity of a directory on a file system with a UUID.
func FS(uuid string, handleType int32, handle []byte) ID {
	return ID(KindFS + ":" + esc(uuid) + ":" + fileHandle(handleType, handle))
}

// OSFS returns the weak identity of a directory on the file system with a
// UUID of the OS of the machine with ID machineID.
func OSFS(uuid string, handleType int32, handle []byte, machineID string) ID {
	return ID(KindOSFS + ":" + esc(uuid) + ":" + fileHandle(handleType, handle) + ":" + escField(machineID))
}

// FileHandle returns the legacy identity of a directory by its file handle
// alone. Nothing produces it any more; PVs may still record it.
func FileHandle(handleType int32, handle []byte) ID {
	return ID(KindFileHandle + ":" + fileHandle(handleType, handle))
}

// FileHandleOnDisk returns the identity of a directory on a file system
// without a UUID on a block device with identity disk.
func FileHandleOnDisk(handleType int32, handle []byte, disk ID) ID {
	return ID(KindFileHandleOnDisk + ":" + fileHandle(handleType, handle) + ":" + escField(string(disk)))
}

// LocalFileHandle returns the weak identity of a directory on a file system
// with neither a UUID nor a device identity, on device major:minor.
func LocalFileHandle(major, minor uint32, handleType int32, handle []byte) ID {
	return ID(KindLocalFileHandle + ":" + strconv.FormatUint(uint64(major), 10) + "." +
		strconv.FormatUint(uint64(minor), 10) + ":" + fileHandle(handleType, handle))
}

// Loop returns the weak identity of a loop device.
func Loop(backingFile string, offset, sizeLimit int64) ID {
	return ID(KindLoop + ":" + strconv.FormatInt(offset, 10) + ":" + strconv.FormatInt(sizeLimit, 10) + ":" + esc(backingFile))
}

func fileHandle(t int32, h []byte) string { return strconv.Itoa(int(t)) + "." + hex.EncodeToString(h) }

func esc(s string) string { return url.PathEscape(s) }

// Kind returns the identity's kind, or "" for the unknown identity.
func (id ID) Kind() string {
	k, _, _ := strings.Cut(string(id), ":")
	return k
}

// Known reports whether the identity says anything.
func (id ID) Known() bool { return id != "" }

// Strong reports whether the identity comes from the device or file system
// itself, so that it proves the same disk on another machine.
func (id ID) Strong() bool {
	kind, rest, _ := strings.Cut(string(id), ":")
	switch kind {
	case KindWWN:
		w, _ := wwnFields(rest)
		return strongWWID(w)
	case KindFS:
		return true
	case KindSerial:
		// model:serial:size, where the model may hold a colon.
		f := strings.Split(rest, ":")
		return len(f) >= 3 && !Placeholder(unesc(f[len(f)-2]))
	case KindNVMe:
		f := strings.Split(rest, ":")
		return len(f) >= 4 && nvmeStrong(unesc(f[1]), unesc(f[3]))
	case KindPartition:
		f := strings.SplitN(rest, ":", 3)
		return len(f) == 3 && ID(unesc(f[2])).Strong()
	case KindFileHandleOnDisk:
		_, disk, ok := strings.Cut(rest, ":")
		return ok && ID(unesc(disk)).Strong()
	}
	return false
}

func unesc(s string) string {
	u, err := url.PathUnescape(s)
	if err != nil {
		return ""
	}
	return u
}

// Valid checks an identity read from an untrusted source (a report, an
// annotation): a known kind, printable, bounded.
func (id ID) Valid() error {
	if id == "" {
		return nil
	}
	if len(id) > MaxLength {
		return fmt.Errorf("disk identity longer than %d bytes", MaxLength)
	}
	switch k, rest, ok := strings.Cut(string(id), ":"); {
	case !ok || rest == "":
		return fmt.Errorf("disk identity %q has no fields", id)
	case !knownKind(k):
		return fmt.Errorf("disk identity %q has unknown kind %q", id, k)
	}
	for _, r := range id {
		if r <= ' ' || r > '~' {
			return fmt.Errorf("disk identity %q has a character outside printable ASCII", id)
		}
	}
	return nil
}

// Match is the result of comparing a recorded identity with a current one.
type Match int

const (
	// Unknown: the two cannot be compared (one is unknown, or they are of
	// different kinds).
	Unknown Match = iota
	// Same: the identities are equal.
	Same
	// Different: both are of one kind and differ.
	Different
)

func (m Match) String() string {
	switch m {
	case Same:
		return "same"
	case Different:
		return "different"
	}
	return "unknown"
}

// Compare compares two identities. Different needs both of one kind. The
// legacy file handle (fh) compares Unknown with everything: it is the same
// for the roots of all ext4 file systems, so it proves nothing.
func Compare(recorded, current ID) Match {
	switch {
	case recorded == "" || current == "":
		return Unknown
	case recorded.Kind() == KindFileHandle || current.Kind() == KindFileHandle:
		return Unknown
	case recorded == current:
		return Same
	case recorded.Kind() == KindWWN && current.Kind() == KindWWN:
		return compareWWN(recorded, current)
	case recorded.Kind() == current.Kind():
		return Different
	}
	return Unknown
}

// compareWWN compares two wwn identities, of which one may lack the serial.
// A WWN without its serial cannot tell apart the LUNs of an array that
// gives several one WWN, so against a WWN with a serial it is Unknown
// (Refines says whether it is a legacy form of it), never Same.
func compareWWN(a, b ID) Match {
	aw, as := wwnFields(strings.TrimPrefix(string(a), KindWWN+":"))
	bw, bs := wwnFields(strings.TrimPrefix(string(b), KindWWN+":"))
	switch {
	case aw != bw || as != "" && bs != "" && as != bs:
		return Different
	case as == "" || bs == "":
		return Unknown
	}
	return Same
}

// SameDisk reports whether two identities prove one disk on two machines:
// they are equal and strong.
func SameDisk(a, b ID) bool { return Compare(a, b) == Same && a.Strong() && b.Strong() }

// DifferentDisk reports whether two identities prove two different disks
// on two machines: both strong, of one kind, and unequal.
func DifferentDisk(a, b ID) bool { return a.Strong() && b.Strong() && Compare(a, b) == Different }

func knownKind(k string) bool {
	switch k {
	case KindWWN, KindSerial, KindFS, KindLoop, KindFileHandle, KindPartition,
		KindFileHandleOnDisk, KindLocalFileHandle, KindNVMe, KindOSFS:
		return true
	}
	return false
}
