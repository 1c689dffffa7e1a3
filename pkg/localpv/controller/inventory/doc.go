// Package inventory is the master's inventory writer: it writes the disk
// inventory of a node's accepted discovery report into the status of the
// node's NodeDiskState (a JSON merge patch of the status subresource, only
// when it differs from the one last written), keeps the per-node inventory
// gauge, and deletes the NodeDiskState of a deleted node, which its
// watcher no longer can. The status fields are in pkg/localpv/README.md
// ("NodeDiskState").
package inventory
