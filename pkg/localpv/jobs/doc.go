// Package jobs builds the discovery and cleanup Jobs the master creates, and
// defines the labels, annotations and finalizers the provisioner puts on its
// Jobs and PVs. README.md in pkg/localpv lists them as a wire contract. It
// also holds what the master reads of its Jobs and their pods (finished,
// succeeded, termination messages), their deletion and their retry backoff.
package jobs
