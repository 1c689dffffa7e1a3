// Package groupexec implements k8s.io/utils/exec.Interface so that every
// command starts as the leader of a new process group, and stopping it (Stop,
// or the end of the context given to CommandContext) signals the whole group.
//
// A flexvolume driver is usually a shell script that forks helpers (mount,
// losetup, sleep, a FUSE daemon that did not call setsid, ...). Killing only
// the script on a timeout leaves those helpers running and, worse, holding the
// script's stdout pipe open so that the caller's Wait never returns. With
// groupexec the caller's timeout really ends the call: the group gets SIGKILL
// when the context ends, and Wait gives up on inherited pipes after WaitDelay.
//
// Processes that called setsid(2) or setpgid(2) themselves (real daemons) have
// left the group on purpose and are not signalled.
package groupexec
