// Package slots bounds the plugin watcher's registration attempts in
// flight. Each attempt holds a goroutine and at most one file descriptor
// while it waits on a plugin, so the limit is sized in file descriptors.
//
// Attempts come in two classes: Normal ones may use every slot; Suspect
// ones (sockets whose failed attempt held its slot for long) use at most
// their own share, so that sockets that stall cannot keep a new plugin
// waiting. An attempt that finds its share full is parked, holding nothing,
// and requeued when a slot is granted to it.
package slots
