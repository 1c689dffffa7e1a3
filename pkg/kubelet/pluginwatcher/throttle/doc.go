// Package throttle rate-limits registration attempts per plugin with one
// token bucket per key. The reconciler admits each attempt twice: under the
// key of the socket's file name (FileKey) before the plugin is contacted,
// and under the escaped plugin name once GetInfo has answered, so that a
// plugin flooding the directory with sockets only delays itself.
//
// A throttled socket is parked, holding nothing, and handed back through
// the release function (the work queue) when a token is reserved for it.
package throttle
