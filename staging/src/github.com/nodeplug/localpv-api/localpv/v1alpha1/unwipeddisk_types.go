package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const (
	// UnwipedDiskKind is the kind of a remembered unwiped disk.
	UnwipedDiskKind = "UnwipedDisk"
	// UnwipedDiskListKind is the kind of a list of UnwipedDisk objects.
	UnwipedDiskListKind = "UnwipedDiskList"
	// UnwipedDiskResource is the plural resource name of UnwipedDisk.
	UnwipedDiskResource = "unwipeddisks"
	// UnwipedDiskFinalizer guards every UnwipedDisk: only a master removes
	// it, when it forgets the disk on purpose (the disk was wiped, an admin
	// kept it, or its entry expired). An object being deleted still counts
	// as remembered.
	UnwipedDiskFinalizer = GroupName + "/unwiped-memory"
)

var (
	// UnwipedDiskGroupVersionResource is the resource used with dynamic
	// clients.
	UnwipedDiskGroupVersionResource = SchemeGroupVersion.WithResource(UnwipedDiskResource)
	// UnwipedDiskGroupVersionKind is the kind of UnwipedDisk.
	UnwipedDiskGroupVersionKind = SchemeGroupVersion.WithKind(UnwipedDiskKind)
)

// +genclient
// +genclient:nonNamespaced
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// UnwipedDisk is one disk that a local-volume-provisioner master dropped
// without a wipe: a released PV's tenant data is still on it. Every
// installation in the cluster reads the same objects and holds a
// remembered disk when it comes back, whichever installation dropped it.
// The object is cluster-scoped and named by the disk's key (see package
// github.com/nodeplug/nodeplug/pkg/localpv/unwiped): "disk-" and 20 hex
// digits of a hash of the identity (and of the node and path, for a weak
// identity).
type UnwipedDisk struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec UnwipedDiskSpec `json:"spec"`
}

// UnwipedDiskSpec is what the master knew of the disk when it dropped its
// PV.
type UnwipedDiskSpec struct {
	// DiskID is the disk's identity as the PV recorded it
	// (localpv.nodeplug.io/disk-id).
	DiskID string `json:"diskID"`
	// PV is the name of the PV whose data is on the disk.
	PV string `json:"pv"`
	// Node is the node the PV was on.
	// +optional
	Node string `json:"node,omitempty"`
	// Path is the PV's path on the node.
	// +optional
	Path string `json:"path,omitempty"`
	// Since is when the disk was remembered.
	Since metav1.Time `json:"since"`
	// Reason says why the PV was dropped without a wipe.
	// +optional
	Reason string `json:"reason,omitempty"`
	// Installation is the master that remembered the disk.
	Installation Installation `json:"installation"`
}

// Installation names one installation of the provisioner.
type Installation struct {
	// Namespace is the installation's namespace.
	Namespace string `json:"namespace"`
	// Provisioner is its provisioner name.
	// +optional
	Provisioner string `json:"provisioner,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// UnwipedDiskList is a list of UnwipedDisk objects.
type UnwipedDiskList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`

	Items []UnwipedDisk `json:"items"`
}
