// Package app implements the flexvolume-installer command: options, the
// atomic install of driver files, and the wait for termination.
package app
