package socket

import (
	"fmt"
	"path"
	"strings"
)

// Suffix is the conventional extension of a registration socket.
const Suffix = ".sock"

// IdentityPolicy says what happens when the socket file name does not carry
// the plugin name returned by GetInfo.
type IdentityPolicy string

const (
	// IdentityReject refuses the registration and reports the reason to the
	// plugin. The socket is not retried until it is replaced.
	IdentityReject IdentityPolicy = "Reject"
	// IdentityWarn registers the plugin anyway and logs a warning.
	IdentityWarn IdentityPolicy = "Warn"
)

// EscapeName turns a plugin name into the form used in socket file names:
// every "/" (as in device-plugin resource names such as "example.com/gpu")
// becomes "_".
func EscapeName(pluginName string) string {
	return strings.ReplaceAll(pluginName, "/", "_")
}

// CarriesName reports whether the socket at rel (its path relative to the
// watched directory, "/"-separated) carries pluginName.
//
// The base name must be the escaped plugin name, either alone or followed by
// one of the separators '.', '-' or '_' and any suffix. This accepts the
// design's "<name>.<timestamp>", node-driver-registrar's "<name>-reg.sock"
// and the DRA helper's "<name>-<uid>-reg.sock". A name containing "/" may
// instead be spelled as directories: "example.com/gpu.123.sock".
func CarriesName(rel, pluginName string) bool {
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

// CheckIdentity applies the identity policy. It returns a non-nil error
// when the registration must be refused, and warn=true when it may proceed
// but the mismatch must be reported.
func CheckIdentity(policy IdentityPolicy, rel, pluginName string) (warn bool, err error) {
	if pluginName == "" {
		return false, fmt.Errorf("plugin at %q returned an empty name", rel)
	}
	if CarriesName(rel, pluginName) {
		return false, nil
	}
	mismatch := fmt.Errorf("socket file %q does not carry plugin name %q (want %s[.|-|_<suffix>])", rel, pluginName, EscapeName(pluginName))
	if policy == IdentityReject {
		return false, mismatch
	}
	return true, mismatch
}
