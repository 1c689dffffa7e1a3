// Package localpv is the root of nodeplug's distributed local PersistentVolume
// static provisioner (design 5 of the SIG Storage proposal: a master that
// creates Jobs, and a watcher in a DaemonSet). See README.md for the wire
// contracts between the components. The subpackages are:
//
//   - config: the ConfigMap format (storageClassMap and friends) and its validation
//   - naming: deterministic PV and Job names
//   - report: the discovery Job's termination-message encoding
//   - discovery, cleanup: the node-side work of the Job entrypoints
//   - jobs: the Job specs the master creates and the labels they carry
//   - controller: the master
//   - watcher: the per-node change watcher
//   - metrics: Prometheus metrics of all components
package localpv
