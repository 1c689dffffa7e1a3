// Package socket describes a plugin registration socket file: its inode
// identity (ID, Lstat), which tells a socket re-created in place from the
// one it replaced, and the naming convention that ties the file to the
// plugin it serves (CarriesName; for DRA drivers also the DRA helper's
// dra-<hash>-reg.sock fallback, IsDRAFallback) with the policy applied when
// it does not (IdentityPolicy, CheckIdentity).
//
// It has no state and no goroutines; every other part of the plugin
// watcher may use it.
package socket
