// Package driver is a small CSI driver whose volumes are directories on one
// node: nodeplug's stand-in for csi-driver-host-path, behind the local
// cluster's default StorageClass (deploy/csi-hostpath).
//
// One process per node serves the Identity, Controller and Node services on
// one unix socket. The controller part creates a volume as a directory in
// the node's data directory, so it runs on every node beside
// external-provisioner in its --node-deployment mode, and every volume
// carries the topology segment of its node. The node part bind-mounts the
// directory into pods and reports its usage. The driver registers itself
// with the kubelet through a registration socket (the staging module
// github.com/nodeplug/registrar), which nodeplug's plugin watcher, or
// upstream's plugin manager, picks up. README.md states the wire contract.
package driver
