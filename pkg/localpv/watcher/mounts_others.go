//go:build !linux

package watcher

import "context"

// watchMounts is not supported here; the periodic resync covers mounts.
func watchMounts(ctx context.Context, _ string, _ func()) error {
	<-ctx.Done()
	return nil
}
