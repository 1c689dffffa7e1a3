package registrar

import (
	"strconv"
	"strings"
	"time"
)

// maxSocketPath is the longest path a unix socket can be bound to on Linux
// (sizeof(sun_path) - 1).
const maxSocketPath = 107

// EscapeName returns the plugin name as it appears in socket file names:
// "/" (as in device-plugin resource names such as "example.com/gpu")
// becomes "_". It is the one spelling of the convention: nodeplug's plugin
// watcher checks socket names against it.
func EscapeName(pluginName string) string {
	return strings.ReplaceAll(pluginName, "/", "_")
}

// SocketName returns the conventional socket file name for a plugin
// instance started at t: "<escaped name>.<unix nanoseconds>.sock". Each
// instance gets its own file, so a restarted plugin never races its
// predecessor for one path, and the kubelet takes the newest live socket.
func SocketName(pluginName string, t time.Time) string {
	return EscapeName(pluginName) + "." + strconv.FormatInt(t.UnixNano(), 10) + ".sock"
}
