package identity

import (
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
)

// NVMe returns the identity of an NVMe namespace: its controller's model and
// serial, its size, and the namespace by its UUID, NGUID or EUI-64, else by
// its number (with the controller's address when the serial is a
// placeholder). It is strong when the namespace has an identifier of its
// own, or its number is on a controller with a real serial.
func NVMe(model, serial string, size int64, ns NVMeNamespace) ID {
	var which string
	switch {
	case ns.UUID != "":
		which = "uuid." + ns.UUID
	case ns.NGUID != "":
		which = "eui." + ns.NGUID
	case ns.EUI64 != "":
		which = "eui." + ns.EUI64
	default:
		which = "nsid." + ns.NSID
	}
	id := KindNVMe + ":" + escField(model) + ":" + escField(serial) + ":" + strconv.FormatInt(size, 10) + ":" + escField(which)
	if !nvmeStrong(serial, which) && ns.Address != "" {
		id += ":" + escField(ns.Address)
	}
	return ID(id)
}

func nvmeStrong(serial, which string) bool {
	return strings.HasPrefix(which, "uuid.") || strings.HasPrefix(which, "eui.") || !Placeholder(serial)
}

// escField escapes a field of a kind whose fields are split at colons.
func escField(s string) string { return strings.ReplaceAll(url.PathEscape(s), ":", "%3A") }

// readNamespace reads what names an NVMe namespace from its sysfs
// directory, or from the kernel's uuid. and nvme.<vid>-<serial>-<model>-<nsid>
// wwids; it returns nil for a device that is no NVMe namespace, or one
// whose namespace cannot be told.
func readNamespace(dir, wwid string) *NVMeNamespace {
	ns := NVMeNamespace{
		NSID: readAttr(filepath.Join(dir, "nsid")), UUID: nonZero(readAttr(filepath.Join(dir, "uuid"))),
		NGUID: nonZero(hexDigits(readAttr(filepath.Join(dir, "nguid")))),
		EUI64: nonZero(hexDigits(readAttr(filepath.Join(dir, "eui")))),
	}
	if u, ok := strings.CutPrefix(wwid, "uuid."); ok && ns.UUID == "" {
		ns.UUID = nonZero(u)
	}
	if rest, ok := strings.CutPrefix(wwid, "nvme."); ok && ns.NSID == "" {
		if i := strings.LastIndexByte(rest, '-'); i >= 0 {
			if n, err := strconv.ParseUint(rest[i+1:], 16, 32); err == nil {
				ns.NSID = strconv.FormatUint(n, 10)
			}
		}
	}
	if ns.NSID == "" && ns.UUID == "" && ns.NGUID == "" && ns.EUI64 == "" {
		return nil
	}
	ns.Address = readAttr(filepath.Join(dir, "device", "address"))
	return &ns
}

// hexDigits returns the hex digits of s: sysfs prints an NGUID as a UUID
// and an EUI-64 as bytes separated by blanks, the wwid as digits alone.
func hexDigits(s string) string {
	return strings.Map(func(r rune) rune {
		if strings.ContainsRune("0123456789abcdefABCDEF", r) {
			return r
		}
		return -1
	}, s)
}

// nonZero returns s, or "" when it has no hex digit other than zero.
func nonZero(s string) string {
	if strings.Trim(s, "0-.:") == "" {
		return ""
	}
	return strings.ToLower(s)
}

// placeholders are serial numbers that firmware and clouds give many
// devices: they name no device.
var placeholders = map[string]bool{
	"nvme_card": true, "nvme_card-pd": true, "to be filled by o.e.m.": true, "default string": true,
	"none": true, "n/a": true, "na": true, "not specified": true, "not available": true, "unknown": true,
	"serial": true, "serialnumber": true, "serial number": true, "system serial number": true, "empty": true,
	"0123456789": true, "1234567890": true, "123456789": true, "0123456789abcdef": true, "oem": true,
}

// Placeholder reports whether a serial number names no device: blank, one
// character repeated (zeros), or a well-known filler (GCE local SSDs'
// nvme_card, "To Be Filled By O.E.M.").
func Placeholder(serial string) bool {
	s := strings.ToLower(strings.TrimSpace(serial))
	if placeholders[s] || strings.HasPrefix(s, "nvme_card") {
		return true
	}
	s = strings.Map(func(r rune) rune {
		if strings.ContainsRune(" -_.:", r) {
			return -1
		}
		return r
	}, s)
	return s == "" || strings.Count(s, s[:1]) == len(s)
}

// strongWWID reports whether a wwid in a wwn identity names one device.
func strongWWID(w string) bool {
	for _, p := range wwnPrefixes {
		if rest, ok := strings.CutPrefix(w, p); ok {
			return nonZero(rest) != ""
		}
	}
	return false
}

// Refines reports whether current is a newer form of the identity that
// recorded holds in a format this package no longer produces, agreeing with
// all that recorded says: a legacy file handle (fh) against a directory
// identity with the same handle, a legacy serial identity of an NVMe
// namespace against its namespace identity (same model, serial and size),
// a WWN alone against the WWN with a serial, a file system identity (fs)
// against the machine-bound identity (osfs) of a directory on the OS's
// file system with the same UUID and handle. Compare says Unknown for each
// of them; a caller may then record current in place of recorded. It
// proves no more than recorded did.
func Refines(recorded, current ID) bool {
	rk, rrest, _ := strings.Cut(string(recorded), ":")
	ck, crest, _ := strings.Cut(string(current), ":")
	switch {
	case rk == KindWWN && ck == KindWWN:
		rw, rs := wwnFields(rrest)
		cw, cs := wwnFields(crest)
		return rs == "" && cs != "" && rw == cw
	case rk == KindFileHandle:
		return handleOf(ck, crest) == rrest && rrest != ""
	case rk == KindFS && ck == KindOSFS:
		// A directory on the OS's file system, recorded before such
		// directories were bound to their machine.
		f := strings.Split(crest, ":")
		return len(f) == 3 && rrest == f[0]+":"+f[1]
	case rk == KindSerial && ck == KindNVMe:
		f := strings.Split(crest, ":")
		if len(f) < 4 {
			return false
		}
		size, err := strconv.ParseInt(f[2], 10, 64)
		return err == nil && Serial(unesc(f[0]), unesc(f[1]), size) == recorded
	}
	return false
}

// handleOf returns the file handle field of a directory identity.
func handleOf(kind, rest string) string {
	f := strings.Split(rest, ":")
	switch {
	case kind == KindFS && len(f) >= 2:
		return f[len(f)-1]
	case kind == KindFileHandleOnDisk && len(f) >= 2:
		return f[0]
	case kind == KindLocalFileHandle && len(f) == 2:
		return f[1]
	case kind == KindOSFS && len(f) == 3:
		return f[1]
	}
	return ""
}

// LegacyBase returns what a recorded identity in a legacy form has in
// common with every identity that refines it (Refines), or "" when none can:
// Refines(recorded, current) implies that LegacyBase(recorded) is one of
// RefinedBases(current). A memory of disks indexed by it finds the legacy
// records of a disk without reading every record.
func LegacyBase(recorded ID) string {
	k, rest, _ := strings.Cut(string(recorded), ":")
	switch k {
	case KindWWN:
		if w, s := wwnFields(rest); s == "" {
			return KindWWN + ":" + w
		}
	case KindFileHandle:
		if rest != "" {
			return KindFileHandle + ":" + rest
		}
	case KindFS:
		return KindFS + ":" + rest
	case KindSerial:
		return string(recorded)
	}
	return ""
}

// RefinedBases returns the LegacyBase of each legacy form that current
// refines.
func RefinedBases(current ID) []string {
	k, rest, _ := strings.Cut(string(current), ":")
	var out []string
	if k == KindWWN {
		if w, s := wwnFields(rest); s != "" {
			out = append(out, KindWWN+":"+w)
		}
	}
	if h := handleOf(k, rest); h != "" {
		out = append(out, KindFileHandle+":"+h)
	}
	f := strings.Split(rest, ":")
	switch {
	case k == KindOSFS && len(f) == 3:
		out = append(out, KindFS+":"+f[0]+":"+f[1])
	case k == KindNVMe && len(f) >= 4:
		if size, err := strconv.ParseInt(f[2], 10, 64); err == nil {
			out = append(out, string(Serial(unesc(f[0]), unesc(f[1]), size)))
		}
	}
	return out
}
