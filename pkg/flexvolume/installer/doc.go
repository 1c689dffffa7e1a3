// Package installer puts flexvolume driver executables into a plugin
// directory so that a prober watching it never sees a partial file, and
// takes them out again only while they are still the ones it wrote.
//
// It is the library side of cmd/flexvolume-installer (which adds the flags
// and the wait for SIGTERM of a DaemonSet), and one of the four places flex
// discovery lives in; docs/flexvolume.md has the map.
package installer
