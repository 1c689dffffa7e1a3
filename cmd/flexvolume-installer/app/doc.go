// Package app is the flexvolume-installer command's wiring: its flags
// (Options), the cobra command, and Run, which installs the drivers with
// pkg/flexvolume/installer, waits for SIGTERM and removes them again with
// --remove-on-exit.
package app
