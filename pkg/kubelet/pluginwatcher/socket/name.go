package socket

import (
	"fmt"
	"path"
	"strings"

	"github.com/nodeplug/registrar"
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
	if hasNamePrefix(path.Base(rel), registrar.EscapeName(pluginName)) {
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

// Claim is what a plugin says it is (GetInfo's type and name) and where
// its registration socket is: Path absolute, Rel relative to the watched
// directory ("/"-separated).
type Claim struct {
	Path, Rel  string
	Type, Name string
}

// Carried reports whether the socket carries the name it claims:
// CarriesName, or, for a DRAPlugin, the DRA helper's fallback name for a
// driver name too long for the named forms (IsDRAFallback).
func (c Claim) Carried() bool {
	return CarriesName(c.Rel, c.Name) || isDRA(c.Type) && IsDRAFallback(c.Path, c.Name)
}

// CheckIdentity applies the identity policy. It returns a non-nil error
// when the registration must be refused, and warn=true when it may proceed
// but the mismatch must be reported.
func CheckIdentity(policy IdentityPolicy, c Claim) (warn bool, err error) {
	if c.Name == "" {
		return false, fmt.Errorf("plugin at %q returned an empty name", c.Rel)
	}
	if c.Carried() {
		return false, nil
	}
	want := registrar.EscapeName(c.Name) + "[.|-|_<suffix>]"
	if isDRA(c.Type) {
		want += ", or dra-<hash>-reg.sock if " + c.Name + "-<hash>-reg.sock would not fit in the directory"
	}
	mismatch := fmt.Errorf("socket file %q does not carry plugin name %q (want %s)", c.Rel, c.Name, want)
	if policy == IdentityReject {
		return false, mismatch
	}
	return true, mismatch
}
