package main

import (
	"encoding/binary"
	"fmt"
	"strconv"
	"strings"
)

// capabilityXattr is the PAX record of a file's capabilities in a layer
// tar; containerd sets it as the file's security.capability when it
// unpacks the layer.
const capabilityXattr = "SCHILY.xattr.security.capability"

// capabilityBits are the capabilities -cap knows, by their number in
// linux/capability.h. A binary that runs as a non-root user needs one of
// them in its file's permitted set to keep it across execve (the
// container's bounding set must hold it too: the pod adds it).
var capabilityBits = map[string]uint{
	"net_bind_service": 10,
	"net_admin":        12,
	"net_raw":          13,
}

// fileCapabilities encodes names ("net_bind_service,net_raw") as the value
// of security.capability: struct vfs_cap_data, revision 2, with the
// capabilities permitted and effective (the effective flag raises them when
// the file is executed, as `setcap cap_x=+ep` does).
func fileCapabilities(names string) (string, error) {
	var permitted uint64
	for _, n := range strings.Split(names, ",") {
		bit, ok := capabilityBits[strings.TrimPrefix(strings.ToLower(n), "cap_")]
		if !ok {
			return "", fmt.Errorf("unknown capability %q: want one of net_bind_service, net_admin, net_raw", n)
		}
		permitted |= 1 << bit
	}
	const revision2, flagEffective = 0x02000000, 0x000001
	b := make([]byte, 20)
	binary.LittleEndian.PutUint32(b[0:], revision2|flagEffective)
	binary.LittleEndian.PutUint32(b[4:], uint32(permitted))      // data[0].permitted
	binary.LittleEndian.PutUint32(b[8:], 0)                      // data[0].inheritable
	binary.LittleEndian.PutUint32(b[12:], uint32(permitted>>32)) // data[1].permitted
	binary.LittleEndian.PutUint32(b[16:], 0)                     // data[1].inheritable
	return string(b), nil
}

// addCapabilities applies each -cap DEST=CAP[,CAP...] to the -file entry
// at DEST.
func (s *imageSpec) addCapabilities(caps []string) error {
	for _, c := range caps {
		dest, names, ok := strings.Cut(c, "=")
		if !ok || names == "" {
			return fmt.Errorf("-cap %q: want DEST=CAP[,CAP...]", c)
		}
		v, err := fileCapabilities(names)
		if err != nil {
			return fmt.Errorf("-cap %q: %w", c, err)
		}
		i := s.fileEntry(dest)
		if i < 0 {
			return fmt.Errorf("-cap %q: no -file %s to give them to", c, dest)
		}
		s.entries[i].caps = v
	}
	return nil
}

func (s *imageSpec) fileEntry(dest string) int {
	for i, e := range s.entries {
		if e.dest == dest && !e.dir && e.link == "" {
			return i
		}
	}
	return -1
}

// checkUser accepts -user UID or UID:GID, numeric (the image has no
// /etc/passwd to look a name up in, and the kubelet's runAsNonRoot check
// needs a number).
func checkUser(u string) error {
	if u == "" {
		return nil
	}
	uid, gid, hasGID := strings.Cut(u, ":")
	ids := []string{uid}
	if hasGID {
		ids = append(ids, gid)
	}
	for _, id := range ids {
		if _, err := strconv.ParseUint(id, 10, 32); err != nil {
			return fmt.Errorf("-user %q: want a numeric UID or UID:GID", u)
		}
	}
	return nil
}
