package discovery

import (
	"bufio"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/nodeplug/nodeplug/pkg/localpv/report"
)

// DefaultUdevDataDir is where discovery Jobs see the host's udev database:
// a Job whose classes have a disk selector mounts the host's /run
// read-only at /host/run.
const DefaultUdevDataDir = "/host/run/udev/data"

// maxUdevRecord bounds what is read of one device's udev record.
const maxUdevRecord = 64 << 10

// udevSignature returns the content type that udev's blkid builtin
// recorded for the block device devNum ("8:16") in the database dir:
// ID_FS_TYPE (a file system, or a member of md, LVM, ZFS, multipath, ...)
// or else ID_PART_TABLE_TYPE; "" when it recorded none, or when the
// database cannot be read (no udev on the host).
func udevSignature(dir, devNum string) string {
	if devNum == "" || strings.ContainsAny(devNum, "/\x00") {
		return ""
	}
	f, err := os.Open(filepath.Join(dir, "b"+devNum))
	if err != nil {
		return ""
	}
	defer func() { _ = f.Close() }()
	var fsType, ptType string
	sc := bufio.NewScanner(io.LimitReader(f, maxUdevRecord))
	for sc.Scan() {
		line := sc.Text()
		if v, ok := strings.CutPrefix(line, "E:ID_FS_TYPE="); ok {
			fsType = v
		} else if v, ok := strings.CutPrefix(line, "E:ID_PART_TABLE_TYPE="); ok {
			ptType = v
		}
	}
	if fsType != "" {
		return signatureName(fsType)
	}
	return signatureName(ptType)
}

// signatureName makes a type that another program named fit a report:
// letters, digits, "_", "-" and "." only, at most 32 of them; a type with
// none of them, or that reads as none or unknown, is "other".
func signatureName(v string) string {
	if v == "" {
		return ""
	}
	var b strings.Builder
	for _, r := range v {
		if b.Len() == 32 {
			break
		}
		if 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || r == '_' || r == '-' || r == '.' {
			b.WriteRune(r)
		}
	}
	switch n := b.String(); n {
	case "", report.SignatureNone, report.SignatureUnknown:
		return "other"
	default:
		return n
	}
}
