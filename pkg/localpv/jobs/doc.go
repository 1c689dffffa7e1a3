// Package jobs builds the discovery and cleanup Jobs the master creates, and
// defines the labels, annotations and finalizers the provisioner puts on its
// Jobs and PVs. README.md in pkg/localpv lists them as a wire contract.
package jobs
