// Package app wires the local-volume-provisioner subcommands: NewCommand
// returns the cobra root command (component-base logging flags) with one
// subcommand per role, each taking its flags from the options subpackage.
//
//   - master: loads the configuration, starts the informers and runs
//     pkg/localpv/controller, under leader election on a Lease unless
//     --leader-elect=false; it serves /metrics, /healthz and /readyz (not
//     ready while the leader's informer caches have not synced).
//   - watcher: runs pkg/localpv/watcher on one node, which writes the node's
//     NodeDiskState through the dynamic client; it serves /metrics and /healthz.
//   - discover: the discovery Job entrypoint; it runs pkg/localpv/discovery
//     and writes its shard of the report to the termination message.
//   - cleanup: the cleanup Job entrypoint; it wipes one volume with
//     pkg/localpv/cleanup.
//
// The Job entrypoints write their error to the termination message too, so
// that the master reads why a Job failed from the pod's status.
package app
