package v1alpha1

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Bounds of UnwipedDisk's fields, which the CRD schema enforces too.
const (
	MaxDiskIDLength = 1024
	MaxPathLength   = 4096
	MaxReasonLength = 1024
	maxNameLength   = 253
)

// UnwipedDiskFromUnstructured converts an object read through a dynamic
// client into an UnwipedDisk.
func UnwipedDiskFromUnstructured(u *unstructured.Unstructured) (*UnwipedDisk, error) {
	out := &UnwipedDisk{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, out); err != nil {
		return nil, fmt.Errorf("failed to convert %s %q: %w", UnwipedDiskKind, u.GetName(), err)
	}
	return out, nil
}

// UnwipedDiskToUnstructured converts an UnwipedDisk for a dynamic client,
// setting its apiVersion and kind.
func UnwipedDiskToUnstructured(d *UnwipedDisk) (*unstructured.Unstructured, error) {
	c := d.DeepCopy()
	c.APIVersion = SchemeGroupVersion.String()
	c.Kind = UnwipedDiskKind
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(c)
	if err != nil {
		return nil, fmt.Errorf("failed to convert %s %q: %w", UnwipedDiskKind, d.Name, err)
	}
	return &unstructured.Unstructured{Object: obj}, nil
}

// ValidateUnwipedDisk checks the rules that the CRD schema also enforces.
// That the name is the key of the spec's disk is checked by its reader
// (package unwiped): the schema cannot express the hash.
func ValidateUnwipedDisk(d *UnwipedDisk) field.ErrorList {
	var errs field.ErrorList
	spec := field.NewPath("spec")
	required := func(p *field.Path, v string, max int) {
		switch {
		case v == "":
			errs = append(errs, field.Required(p, ""))
		case len(v) > max:
			errs = append(errs, field.TooLong(p, "", max))
		}
	}
	required(spec.Child("diskID"), d.Spec.DiskID, MaxDiskIDLength)
	required(spec.Child("pv"), d.Spec.PV, maxNameLength)
	required(spec.Child("installation", "namespace"), d.Spec.Installation.Namespace, 63)
	for _, f := range []struct {
		p   *field.Path
		v   string
		max int
	}{
		{spec.Child("node"), d.Spec.Node, maxNameLength},
		{spec.Child("path"), d.Spec.Path, MaxPathLength},
		{spec.Child("reason"), d.Spec.Reason, MaxReasonLength},
		{spec.Child("installation", "provisioner"), d.Spec.Installation.Provisioner, maxNameLength},
	} {
		if len(f.v) > f.max {
			errs = append(errs, field.TooLong(f.p, "", f.max))
		}
	}
	if d.Spec.Since.IsZero() {
		errs = append(errs, field.Required(spec.Child("since"), ""))
	}
	return errs
}
