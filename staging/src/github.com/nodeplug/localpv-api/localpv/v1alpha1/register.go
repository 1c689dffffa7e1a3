package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

const (
	// GroupName is the API group of this package.
	GroupName = "localpv.nodeplug.io"
	// Version is the API version of this package.
	Version = "v1alpha1"
	// Kind is the kind of the per-node notification object.
	Kind = "NodeDiskState"
	// ListKind is the kind of a list of NodeDiskState objects.
	ListKind = "NodeDiskStateList"
	// Resource is the plural resource name of NodeDiskState.
	Resource = "nodediskstates"
)

var (
	// SchemeGroupVersion is the group and version of this package.
	SchemeGroupVersion = schema.GroupVersion{Group: GroupName, Version: Version}
	// SchemeGroupVersionResource is the resource used with dynamic clients.
	SchemeGroupVersionResource = SchemeGroupVersion.WithResource(Resource)
	// SchemeGroupVersionKind is the kind of NodeDiskState.
	SchemeGroupVersionKind = SchemeGroupVersion.WithKind(Kind)

	// SchemeBuilder registers this package's types.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)
	// AddToScheme adds this package's types to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

func addKnownTypes(scheme *runtime.Scheme) error {
	scheme.AddKnownTypes(SchemeGroupVersion, &NodeDiskState{}, &NodeDiskStateList{}, &UnwipedDisk{}, &UnwipedDiskList{})
	metav1.AddToGroupVersion(scheme, SchemeGroupVersion)
	return nil
}
