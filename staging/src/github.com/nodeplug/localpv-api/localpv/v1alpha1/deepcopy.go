package v1alpha1

// This file is written by hand: k8s.io/code-generator is not available to the
// build. Keep it in step with types.go; TestDeepCopyIsIndependent and
// TestDeepCopyCoversAllFields (types_test.go) check that copies share no
// memory with their originals and that no field is left out.

import (
	"k8s.io/apimachinery/pkg/runtime"
)

// DeepCopyInto copies the receiver into out. in must be non-nil.
func (in *NodeDiskStateSpec) DeepCopyInto(out *NodeDiskStateSpec) {
	*out = *in
	in.ObservedTime.DeepCopyInto(&out.ObservedTime)
}

// DeepCopy returns a deep copy of the receiver.
func (in *NodeDiskStateSpec) DeepCopy() *NodeDiskStateSpec {
	if in == nil {
		return nil
	}
	out := new(NodeDiskStateSpec)
	in.DeepCopyInto(out)
	return out
}

// DeepCopyInto copies the receiver into out. in must be non-nil.
func (in *Disk) DeepCopyInto(out *Disk) {
	*out = *in
	if in.IDs != nil {
		out.IDs = make([]string, len(in.IDs))
		copy(out.IDs, in.IDs)
	}
}

// DeepCopy returns a deep copy of the receiver.
func (in *Disk) DeepCopy() *Disk {
	if in == nil {
		return nil
	}
	out := new(Disk)
	in.DeepCopyInto(out)
	return out
}

// DeepCopyInto copies the receiver into out. in must be non-nil.
func (in *NodeDiskStateStatus) DeepCopyInto(out *NodeDiskStateStatus) {
	*out = *in
	if in.Disks != nil {
		out.Disks = make([]Disk, len(in.Disks))
		for i := range in.Disks {
			in.Disks[i].DeepCopyInto(&out.Disks[i])
		}
	}
	if in.InventoryTime != nil {
		out.InventoryTime = in.InventoryTime.DeepCopy()
	}
}

// DeepCopy returns a deep copy of the receiver.
func (in *NodeDiskStateStatus) DeepCopy() *NodeDiskStateStatus {
	if in == nil {
		return nil
	}
	out := new(NodeDiskStateStatus)
	in.DeepCopyInto(out)
	return out
}

// DeepCopyInto copies the receiver into out. in must be non-nil.
func (in *NodeDiskState) DeepCopyInto(out *NodeDiskState) {
	*out = *in
	out.TypeMeta = in.TypeMeta
	in.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	in.Spec.DeepCopyInto(&out.Spec)
	in.Status.DeepCopyInto(&out.Status)
}

// DeepCopy returns a deep copy of the receiver.
func (in *NodeDiskState) DeepCopy() *NodeDiskState {
	if in == nil {
		return nil
	}
	out := new(NodeDiskState)
	in.DeepCopyInto(out)
	return out
}

// DeepCopyObject implements runtime.Object.
func (in *NodeDiskState) DeepCopyObject() runtime.Object {
	if c := in.DeepCopy(); c != nil {
		return c
	}
	return nil
}

// DeepCopyInto copies the receiver into out. in must be non-nil.
func (in *NodeDiskStateList) DeepCopyInto(out *NodeDiskStateList) {
	*out = *in
	out.TypeMeta = in.TypeMeta
	in.ListMeta.DeepCopyInto(&out.ListMeta)
	if in.Items != nil {
		out.Items = make([]NodeDiskState, len(in.Items))
		for i := range in.Items {
			in.Items[i].DeepCopyInto(&out.Items[i])
		}
	}
}

// DeepCopy returns a deep copy of the receiver.
func (in *NodeDiskStateList) DeepCopy() *NodeDiskStateList {
	if in == nil {
		return nil
	}
	out := new(NodeDiskStateList)
	in.DeepCopyInto(out)
	return out
}

// DeepCopyObject implements runtime.Object.
func (in *NodeDiskStateList) DeepCopyObject() runtime.Object {
	if c := in.DeepCopy(); c != nil {
		return c
	}
	return nil
}
