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
// to.
type NodeDiskState struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec NodeDiskStateSpec `json:"spec"`
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
