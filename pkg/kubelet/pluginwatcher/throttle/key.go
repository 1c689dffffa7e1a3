package throttle

import (
	"strings"

	"github.com/nodeplug/nodeplug/pkg/kubelet/pluginwatcher/socket"
)

// FileKey is the token-bucket key derived from a socket's file name before
// the plugin is contacted: rel (the path relative to the watched
// directory) without ".sock" and without one trailing ".<digits>"
// timestamp. Sockets following the naming convention for one plugin
// therefore share one bucket.
func FileKey(rel string) string {
	key := strings.TrimSuffix(rel, socket.Suffix)
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
