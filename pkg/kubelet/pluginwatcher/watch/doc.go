// Package watch populates the plugin watcher's desired state of the world
// from the file system: it records every unix socket below the plugin
// directory (with its inode identity) and queues each path whose state
// changed for the reconciler. It never contacts a plugin.
//
// The directory is watched through pkg/util/dirwatch, which adds a watch
// on every new subdirectory, re-creates the directory if it is removed,
// retries subdirectories it cannot watch and says when events may have
// been lost. This package keeps the plugin watcher's policy: names
// starting with "." are ignored, only sockets count, the tree is scanned
// for sockets at start (restart recovery), after an overflow and whenever
// dirwatch asks for a rescan, and an unwatchable subdirectory is reported
// (log, Node event, watch_errors_total) without aborting the scan.
package watch
