// Package watch populates the plugin watcher's desired state of the world
// from the file system: it keeps a recursive fsnotify watch on the plugin
// directory, records every unix socket below it (with its inode identity)
// and queues each path whose state changed for the reconciler. It never
// contacts a plugin.
//
// It scans the tree at start (restart recovery) and after an event
// overflow, ignores names starting with ".", skips a subdirectory it
// cannot watch without aborting the scan, and re-creates the directory if
// it is removed.
package watch
