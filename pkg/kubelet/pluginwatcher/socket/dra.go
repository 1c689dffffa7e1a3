package socket

import (
	"path/filepath"
	"regexp"
	"strings"

	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"
)

// The rolling-update registration socket names of upstream's DRA helper
// (k8s.io/dynamic-resource-allocation/kubeletplugin,
// RollingUpdateRegistrarSocketFile, kubernetes#139623): the first of
// these whose path in the registration directory is at most
// draHelperPathMax bytes long.
//
//  1. <driver>-<pod UID>-reg.sock
//  2. <driver>-<11 base64url characters: 8 bytes of a hash of the UID>-reg.sock
//  3. dra-<22 base64url characters: 16 bytes of a hash of driver and UID>-reg.sock
//
// The first two carry the driver name (CarriesName). The third does not,
// and the hash cannot be checked without the pod UID.
const (
	draHelperPathMax   = 108
	draHashedUIDLen    = 11
	draHashedSuffixLen = len("-reg.sock")
)

var draFallbackName = regexp.MustCompile(`^dra-[A-Za-z0-9_-]{22}-reg\.sock$`)

// IsDRAFallback reports whether the registration socket at path (absolute)
// may be the DRA helper's third name for driver: its base name has that
// form, and the helper's second name for driver would not fit in path's
// directory, so the helper had to fall back to it. A driver whose second
// name fits would never get the third, so a socket of that form claiming
// such a driver is not taken as carrying its name.
//
// The length is measured on the directory as the kubelet sees it. A helper
// that sees the directory under a shorter path (only the hostPath of its
// registration directory changed) falls back only for longer names, so
// its sockets still pass; one that sees it under a longer path than the
// host's may fall back for a name this check refuses.
func IsDRAFallback(path, driver string) bool {
	if driver == "" || !draFallbackName.MatchString(filepath.Base(path)) {
		return false
	}
	hashed := driver + "-" + strings.Repeat("x", draHashedUIDLen) + strings.Repeat("x", draHashedSuffixLen)
	return len(filepath.Join(filepath.Dir(path), hashed)) > draHelperPathMax
}

// isDRA reports whether pluginType is upstream's DRA plugin type.
func isDRA(pluginType string) bool {
	return pluginType == registerapi.DRAPlugin
}
