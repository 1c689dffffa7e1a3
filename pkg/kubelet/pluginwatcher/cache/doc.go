// Package cache holds the plugin watcher's two views of the world and the
// handler interface the actual state refers to.
//
// DesiredStateOfWorld is the set of socket files that exist in the watched
// tree, each with its inode identity and a generation that changes when
// the file is replaced. The file watcher writes it; the reconciler reads
// it.
//
// ActualStateOfWorld is what the reconciler learnt from each probed socket
// (plugin type, name, endpoint, versions) and what it did with it: which
// socket is registered with the handler for each plugin (type, name), which
// are standbys, rejected or backing off.
//
// Policy, which a Handler may ask for, says whether one socket per plugin
// is registered or all of them, and whether a registered socket that
// refuses connections is kept.
//
// Both are in memory and safe for concurrent use; they perform no I/O.
package cache
