package identity

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Disk returns the identity of a whole disk that is no NVMe namespace from
// its sysfs attributes, as Attributes.ID does: its world wide name (with
// its serial for a SCSI NAA WWN) when it has one, else its serial with
// model and size, else the unknown identity.
func Disk(wwn, model, serial string, size int64) ID {
	return Attributes{WWN: wwn, Model: model, Serial: serial, Size: size}.ID()
}

// LoopDevice returns the identity of loop device name (such as "loop3") from
// sysfs below sysDir, or the unknown identity when it has no backing file.
func LoopDevice(sysDir, name string) ID {
	dir := filepath.Join(sysDir, "block", name, "loop")
	file := readAttr(filepath.Join(dir, "backing_file"))
	if file == "" {
		return ""
	}
	offset, _ := strconv.ParseInt(readAttr(filepath.Join(dir, "offset")), 10, 64)
	limit, _ := strconv.ParseInt(readAttr(filepath.Join(dir, "sizelimit")), 10, 64)
	return Loop(file, offset, limit)
}

func readAttr(p string) string {
	b, err := os.ReadFile(p)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(strings.Trim(string(b), "\x00"))
}
