// Package v1alpha1 holds the localpv.nodeplug.io/v1alpha1 API: the
// cluster-scoped NodeDiskState object through which a node's watcher tells the
// local-volume-provisioner master that the node's discovery directories
// changed. There is one object per node, named after the node.
//
// The object carries no volume list: it is only a change notification. The
// master answers it by running a discovery Job on that node, so a node that
// lies in its NodeDiskState can at worst cause extra discovery Jobs on itself.
//
// +k8s:deepcopy-gen=package
// +groupName=localpv.nodeplug.io
package v1alpha1
