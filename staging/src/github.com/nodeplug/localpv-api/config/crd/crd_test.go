package crd

import (
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/nodeplug/localpv-api/localpv/v1alpha1"
)

func TestCRDMatchesTypes(t *testing.T) {
	tests := []struct {
		name                   string
		yaml                   []byte
		kind, listKind, plural string
	}{
		{name: "NodeDiskState", yaml: NodeDiskStatesYAML, kind: v1alpha1.Kind, listKind: v1alpha1.ListKind, plural: v1alpha1.Resource},
		{name: "UnwipedDisk", yaml: UnwipedDisksYAML, kind: v1alpha1.UnwipedDiskKind, listKind: v1alpha1.UnwipedDiskListKind,
			plural: v1alpha1.UnwipedDiskResource},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
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
			if err := yaml.Unmarshal(tc.yaml, &doc); err != nil {
				t.Fatalf("CRD YAML does not parse: %v", err)
			}
			s := doc.Spec
			if doc.Metadata.Name != tc.plural+"."+v1alpha1.GroupName {
				t.Errorf("metadata.name = %q", doc.Metadata.Name)
			}
			if s.Group != v1alpha1.GroupName || s.Scope != "Cluster" {
				t.Errorf("group/scope = %q/%q", s.Group, s.Scope)
			}
			if s.Names.Kind != tc.kind || s.Names.ListKind != tc.listKind || s.Names.Plural != tc.plural {
				t.Errorf("names = %+v", s.Names)
			}
			if len(s.Versions) != 1 || s.Versions[0].Name != v1alpha1.Version || !s.Versions[0].Served || !s.Versions[0].Storage {
				t.Errorf("versions = %+v", s.Versions)
			}
		})
	}
}
