package pluginwatcher

import (
	"fmt"
	"path"
	"strings"
)

// SocketSuffix is the conventional extension of a registration socket.
const SocketSuffix = ".sock"

// EscapeName turns a plugin name into the form used in socket file names:
// every "/" (as in device-plugin resource names such as "example.com/gpu")
// becomes "_".
func EscapeName(pluginName string) string {
	return strings.ReplaceAll(pluginName, "/", "_")
}

// SocketCarriesName reports whether the socket at rel (its path relative to
// the watched directory, "/"-separated) carries pluginName.
//
// The base name must be the escaped plugin name, either alone or followed by
// one of the separators '.', '-' or '_' and any suffix. This accepts the
// design's "<name>.<timestamp>", node-driver-registrar's "<name>-reg.sock"
// and the DRA helper's "<name>-<uid>-reg.sock". A name containing "/" may
// instead be spelled as directories: "example.com/gpu.123.sock".
func SocketCarriesName(rel, pluginName string) bool {
	if pluginName == "" {
		return false
	}
	if hasNamePrefix(path.Base(rel), EscapeName(pluginName)) {
		return true
	}
	return strings.Contains(pluginName, "/") && hasNamePrefix(rel, pluginName)
}

func hasNamePrefix(s, name string) bool {
	if !strings.HasPrefix(s, name) {
		return false
	}
	if len(s) == len(name) {
		return true
	}
	return strings.ContainsRune(".-_", rune(s[len(name)]))
}

// throttleKey is the token-bucket key derived from a socket's file name
// before the plugin is contacted: the relative path without ".sock" and
// without one trailing ".<digits>" timestamp. Sockets following the naming
// convention for one plugin therefore share one bucket.
func throttleKey(rel string) string {
	key := strings.TrimSuffix(rel, SocketSuffix)
	dot := strings.LastIndexByte(key, '.')
	if dot > 0 && dot > strings.LastIndexByte(key, '/')+1 && isDigits(key[dot+1:]) {
		key = key[:dot]
	}
	return key
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// checkIdentity applies the identity policy. It returns a non-nil error
// when the registration must be refused, and warn=true when it may proceed
// but the mismatch must be reported.
func checkIdentity(policy IdentityPolicy, rel, pluginName string) (warn bool, err error) {
	if pluginName == "" {
		return false, fmt.Errorf("plugin at %q returned an empty name", rel)
	}
	if SocketCarriesName(rel, pluginName) {
		return false, nil
	}
	mismatch := fmt.Errorf("socket file %q does not carry plugin name %q (want %s[.|-|_<suffix>])", rel, pluginName, EscapeName(pluginName))
	if policy == IdentityReject {
		return false, mismatch
	}
	return true, mismatch
}
