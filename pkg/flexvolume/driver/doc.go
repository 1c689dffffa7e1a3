// Package driver is a client for the flexvolume driver call protocol: it runs
// a driver executable with one command and its arguments, and turns the JSON
// status the driver prints into Go values and errors.
//
// The package knows nothing about Kubernetes volume plugins; it is used by the
// prober (pkg/flexvolume/prober), which runs "init", and by the volume plugin
// adapter (pkg/flexvolume/flexadapter), which runs every other command. README.md
// in this directory states the wire contract.
//
// Every call goes through a k8s.io/utils/exec.Interface, has a timeout, and
// reads at most MaxOutputBytes from each of stdout and stderr. Use
// pkg/util/groupexec as the runner so that a timeout kills the driver's whole
// process group.
package driver
