package naming

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"strconv"
)

const (
	// PVPrefix starts every PV name made here.
	PVPrefix = "local-pv-"
	// DiscoveryJobPrefix starts every discovery Job name.
	DiscoveryJobPrefix = "lpv-discover-"
	// CleanupJobPrefix starts every cleanup Job name.
	CleanupJobPrefix = "lpv-clean-"

	// IDLength is the number of hex characters kept from a digest (80 bits).
	IDLength = 20
)

// Hash returns the first IDLength hex characters of the SHA-256 of the
// length-prefixed fields.
func Hash(fields ...string) string {
	h := sha256.New()
	var n [binary.MaxVarintLen64]byte
	for _, f := range fields {
		h.Write(n[:binary.PutUvarint(n[:], uint64(len(f)))])
		h.Write([]byte(f))
	}
	return hex.EncodeToString(h.Sum(nil))[:IDLength]
}

// VolumeID identifies a volume by the node's name and the volume's path on
// the host. It is the same whichever storage class the volume is published
// in, so a class rename never yields a second PV for one disk.
func VolumeID(nodeName, hostPath string) string {
	return Hash("volume", nodeName, hostPath)
}

// MachineVolumeID identifies a volume by the node's name, the volume's path
// on the host and the machine identity of the node (its machine ID and
// system UUID). With no identity it is VolumeID, so the PVs of nodes that
// report none, and the PVs published before identities were recorded, keep
// their names; a new machine under a reused node name gets new ones.
func MachineVolumeID(nodeName, hostPath, machineID, systemUUID string) string {
	if machineID == "" && systemUUID == "" {
		return VolumeID(nodeName, hostPath)
	}
	return Hash("volume", nodeName, hostPath, "machine", machineID, systemUUID)
}

// PVName returns the PV name for a volume.
func PVName(nodeName, hostPath string) string {
	return PVPrefix + VolumeID(nodeName, hostPath)
}

// PVNameForID returns the PV name of a volume ID.
func PVNameForID(volumeID string) string {
	return PVPrefix + volumeID
}

// NodeID is a label-safe stand-in for a node name, which may be longer than a
// label value allows.
func NodeID(nodeName string) string {
	return Hash("node", nodeName)
}

// DiscoveryJobName returns the name of the single discovery Job a node may
// have at a time.
func DiscoveryJobName(nodeName string) string {
	return DiscoveryJobPrefix + NodeID(nodeName)
}

// CleanupJobName returns the name of a volume's cleanup Job for one attempt.
func CleanupJobName(volumeID string, attempt int) string {
	return CleanupJobPrefix + volumeID + "-" + strconv.Itoa(attempt)
}
