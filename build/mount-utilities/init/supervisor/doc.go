// Package supervisor is the logic of the mount-utilities image's /init: a
// minimal PID 1 that reaps every child that exits (FUSE daemons started by
// the flex driver through CRI exec are reparented to it when the driver's
// shell exits), optionally runs one command and forwards SIGTERM and SIGINT
// to it, and returns cleanly on SIGTERM.
package supervisor
