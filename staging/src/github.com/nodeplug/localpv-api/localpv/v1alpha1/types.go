package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// NotificationReason says why a watcher wrote its NodeDiskState.
type NotificationReason string

const (
	// ReasonStarted is written once when a watcher starts, so the master
	// discovers the node even if nothing changed while no watcher ran.
	ReasonStarted NotificationReason = "Started"
	// ReasonChanged is written when inotify or a mount table change altered
	// the watcher's view of the discovery directories.
	ReasonChanged NotificationReason = "Changed"
	// ReasonResync is written when the slow periodic rescan found a change
	// that no event reported.
	ReasonResync NotificationReason = "Resync"
)

// +genclient
// +genclient:nonNamespaced
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// NodeDiskState is a per-node change notification written by the node's
// watcher. Its name, and spec.nodeName, must be the node's name; an admission
// policy lets a watcher write only the object of the node its token is bound
// to. Its status, the node's disk inventory, is written by the master only
// (the status subresource), from the discovery reports it accepted.
type NodeDiskState struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec NodeDiskStateSpec `json:"spec"`
	// +optional
	Status NodeDiskStateStatus `json:"status,omitempty"`
}

// NodeDiskStateStatus is the node's disk inventory as the master last
// recorded it.
type NodeDiskStateStatus struct {
	// Disks are the node's whole block devices, sorted by name, at most 64.
	// +optional
	Disks []Disk `json:"disks,omitempty"`
	// DisksTotal counts every disk, also those left out of Disks.
	// +optional
	DisksTotal int32 `json:"disksTotal,omitempty"`
	// InventoryTime is when the master recorded the inventory.
	// +optional
	InventoryTime *metav1.Time `json:"inventoryTime,omitempty"`
}

// Disk is one whole block device of a node, as its sysfs, its udev links
// and its first sectors show it.
type Disk struct {
	// Name is the kernel name, such as sda or nvme0n1. It may change across
	// reboots; IDs do not.
	Name string `json:"name"`
	// SizeBytes is the size in bytes.
	SizeBytes int64 `json:"sizeBytes"`
	// Rotational is the kernel's queue/rotational flag.
	Rotational bool `json:"rotational"`
	// +optional
	Removable bool `json:"removable,omitempty"`
	// +optional
	ReadOnly bool `json:"readOnly,omitempty"`
	// +optional
	Model string `json:"model,omitempty"`
	// +optional
	Vendor string `json:"vendor,omitempty"`
	// +optional
	Serial string `json:"serial,omitempty"`
	// WWN is the world wide name in the kernel's naa., eui. or nguid. form.
	// +optional
	WWN string `json:"wwn,omitempty"`
	// IDs are the disk's link names in /dev/disk/by-id.
	// +optional
	IDs []string `json:"ids,omitempty"`
	// Partitions counts the disk's partitions.
	// +optional
	Partitions int32 `json:"partitions,omitempty"`
	// Holders counts the devices stacked on the disk (device-mapper, md).
	// +optional
	Holders int32 `json:"holders,omitempty"`
	// Stacked is set for a device built on others (device-mapper, md).
	// +optional
	Stacked bool `json:"stacked,omitempty"`
	// Signature is the partition table or file system type found in the
	// disk's first sectors, "none", or "unknown" when it could not be read.
	// +optional
	Signature string `json:"signature,omitempty"`
}

// NodeDiskStateSpec is the watcher's summary of its view.
type NodeDiskStateSpec struct {
	// NodeName is the node the watcher runs on. It must equal metadata.name.
	NodeName string `json:"nodeName"`
	// Digest is the lowercase hex SHA-256 of the watcher's view of the
	// discovery directories: entry names, types and mount state.
	Digest string `json:"digest"`
	// Entries is the number of entries in the view. Informational.
	// +optional
	Entries int32 `json:"entries,omitempty"`
	// Reason says what made the watcher write this object.
	// +optional
	Reason NotificationReason `json:"reason,omitempty"`
	// ObservedTime is when the watcher computed the view. A new time with an
	// unchanged digest still asks the master for a discovery run.
	ObservedTime metav1.Time `json:"observedTime"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// NodeDiskStateList is a list of NodeDiskState objects.
type NodeDiskStateList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`

	Items []NodeDiskState `json:"items"`
}
