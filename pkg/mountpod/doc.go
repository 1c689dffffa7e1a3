// Package mountpod finds the pod that serves mount utilities for a volume
// plugin on this node (the "mount utilities in pods" design,
// --experimental-mount-namespace).
//
// A pod qualifies when it is in the mount namespace, bound to this node,
// Running and Ready, not being deleted, and carries the plugin's label with
// the value "true". The label key encodes the plugin name (see LabelKey):
// in-tree plugins "kubernetes.io/<name>" use "mount.kubernetes.io/<name>";
// flexvolume drivers use "flexvolume.mount.kubernetes.io/<escaped driver>".
// Pods are read from an informer scoped to the namespace and the node, so a
// lookup never calls the API server. README.md states the contract.
package mountpod
