// Package app is the command line of mount-utilities-upgrade: its flags
// (Options), the client-go wiring, and the exit codes. The procedure is
// pkg/mountpod/upgrade.
package app
