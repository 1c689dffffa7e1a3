package v1alpha1

import (
	"fmt"
	"regexp"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

var digestRE = regexp.MustCompile(`^[0-9a-f]{64}$`)

// FromUnstructured converts an object read through a dynamic client or
// informer into a NodeDiskState.
func FromUnstructured(u *unstructured.Unstructured) (*NodeDiskState, error) {
	out := &NodeDiskState{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, out); err != nil {
		return nil, fmt.Errorf("failed to convert %s %q: %w", Kind, u.GetName(), err)
	}
	return out, nil
}

// ToUnstructured converts a NodeDiskState for a dynamic client, setting its
// apiVersion and kind.
func ToUnstructured(s *NodeDiskState) (*unstructured.Unstructured, error) {
	c := s.DeepCopy()
	c.APIVersion = SchemeGroupVersion.String()
	c.Kind = Kind
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(c)
	if err != nil {
		return nil, fmt.Errorf("failed to convert %s %q: %w", Kind, s.Name, err)
	}
	return &unstructured.Unstructured{Object: obj}, nil
}

// Validate checks the rules that the CRD schema also enforces, so that a
// reader does not have to trust the apiserver's copy of the schema.
func Validate(s *NodeDiskState) field.ErrorList {
	var errs field.ErrorList
	spec := field.NewPath("spec")
	if s.Spec.NodeName == "" {
		errs = append(errs, field.Required(spec.Child("nodeName"), ""))
	} else if s.Spec.NodeName != s.Name {
		errs = append(errs, field.Invalid(spec.Child("nodeName"), s.Spec.NodeName, "must equal metadata.name"))
	}
	if !digestRE.MatchString(s.Spec.Digest) {
		errs = append(errs, field.Invalid(spec.Child("digest"), s.Spec.Digest, "must be 64 lowercase hex characters"))
	}
	if s.Spec.Entries < 0 {
		errs = append(errs, field.Invalid(spec.Child("entries"), s.Spec.Entries, "must not be negative"))
	}
	switch s.Spec.Reason {
	case "", ReasonStarted, ReasonChanged, ReasonResync:
	default:
		errs = append(errs, field.NotSupported(spec.Child("reason"), s.Spec.Reason,
			[]NotificationReason{ReasonStarted, ReasonChanged, ReasonResync}))
	}
	return errs
}
