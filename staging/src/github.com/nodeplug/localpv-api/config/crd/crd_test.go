package crd

import (
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/nodeplug/localpv-api/localpv/v1alpha1"
)

func TestCRDMatchesTypes(t *testing.T) {
	var doc struct {
		Metadata struct{ Name string }
		Spec     struct {
			Group    string
			Scope    string
			Names    struct{ Kind, ListKind, Plural string }
			Versions []struct {
				Name    string
				Served  bool
				Storage bool
			}
		}
	}
	if err := yaml.Unmarshal(NodeDiskStatesYAML, &doc); err != nil {
		t.Fatalf("CRD YAML does not parse: %v", err)
	}
	s := doc.Spec
	if doc.Metadata.Name != v1alpha1.Resource+"."+v1alpha1.GroupName {
		t.Errorf("metadata.name = %q", doc.Metadata.Name)
	}
	if s.Group != v1alpha1.GroupName || s.Scope != "Cluster" {
		t.Errorf("group/scope = %q/%q", s.Group, s.Scope)
	}
	if s.Names.Kind != v1alpha1.Kind || s.Names.ListKind != v1alpha1.ListKind || s.Names.Plural != v1alpha1.Resource {
		t.Errorf("names = %+v", s.Names)
	}
	if len(s.Versions) != 1 || s.Versions[0].Name != v1alpha1.Version || !s.Versions[0].Served || !s.Versions[0].Storage {
		t.Errorf("versions = %+v", s.Versions)
	}
}
