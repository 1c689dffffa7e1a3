package v1alpha1

// Written by hand like deepcopy.go; TestUnwipedDiskDeepCopy
// (unwipeddisk_test.go) guards it.

import (
	"k8s.io/apimachinery/pkg/runtime"
)

// DeepCopyInto copies the receiver into out. in must be non-nil.
func (in *UnwipedDiskSpec) DeepCopyInto(out *UnwipedDiskSpec) {
	*out = *in
	in.Since.DeepCopyInto(&out.Since)
}

// DeepCopy returns a deep copy of the receiver.
func (in *UnwipedDiskSpec) DeepCopy() *UnwipedDiskSpec {
	if in == nil {
		return nil
	}
	out := new(UnwipedDiskSpec)
	in.DeepCopyInto(out)
	return out
}

// DeepCopyInto copies the receiver into out. in must be non-nil.
func (in *UnwipedDisk) DeepCopyInto(out *UnwipedDisk) {
	*out = *in
	out.TypeMeta = in.TypeMeta
	in.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	in.Spec.DeepCopyInto(&out.Spec)
}

// DeepCopy returns a deep copy of the receiver.
func (in *UnwipedDisk) DeepCopy() *UnwipedDisk {
	if in == nil {
		return nil
	}
	out := new(UnwipedDisk)
	in.DeepCopyInto(out)
	return out
}

// DeepCopyObject implements runtime.Object.
func (in *UnwipedDisk) DeepCopyObject() runtime.Object {
	if c := in.DeepCopy(); c != nil {
		return c
	}
	return nil
}

// DeepCopyInto copies the receiver into out. in must be non-nil.
func (in *UnwipedDiskList) DeepCopyInto(out *UnwipedDiskList) {
	*out = *in
	out.TypeMeta = in.TypeMeta
	in.ListMeta.DeepCopyInto(&out.ListMeta)
	if in.Items != nil {
		out.Items = make([]UnwipedDisk, len(in.Items))
		for i := range in.Items {
			in.Items[i].DeepCopyInto(&out.Items[i])
		}
	}
}

// DeepCopy returns a deep copy of the receiver.
func (in *UnwipedDiskList) DeepCopy() *UnwipedDiskList {
	if in == nil {
		return nil
	}
	out := new(UnwipedDiskList)
	in.DeepCopyInto(out)
	return out
}

// DeepCopyObject implements runtime.Object.
func (in *UnwipedDiskList) DeepCopyObject() runtime.Object {
	if c := in.DeepCopy(); c != nil {
		return c
	}
	return nil
}
