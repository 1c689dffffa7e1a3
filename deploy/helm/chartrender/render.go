package chartrender

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"sort"
	"strings"

	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// Options say what to render.
type Options struct {
	// ChartDir is the chart's directory.
	ChartDir string
	// Release and Namespace are the release's name and namespace.
	Release, Namespace string
	// Values are the user's values, merged over the chart's values.yaml.
	Values map[string]any
	// Cluster answers the chart's lookup calls, as the apiserver does
	// under helm install; nil answers none, as under helm template.
	Cluster engine.ClientProvider
}

// Render renders the chart and returns its objects, CustomResourceDefinitions
// first, then in template order. A template that calls fail makes it
// return that message in its error.
func Render(opts Options) ([]*unstructured.Unstructured, error) {
	ch, err := loader.Load(opts.ChartDir)
	if err != nil {
		return nil, fmt.Errorf("failed to load chart %s: %w", opts.ChartDir, err)
	}
	release := chartutil.ReleaseOptions{Name: opts.Release, Namespace: opts.Namespace, Revision: 1, IsInstall: true}
	vals, err := chartutil.ToRenderValues(ch, opts.Values, release, chartutil.DefaultCapabilities)
	if err != nil {
		return nil, fmt.Errorf("failed to compute the values of chart %s: %w", opts.ChartDir, err)
	}
	var files map[string]string
	if opts.Cluster != nil {
		files, err = engine.RenderWithClientProvider(ch, vals, opts.Cluster)
	} else {
		files, err = engine.Render(ch, vals)
	}
	if err != nil {
		return nil, fmt.Errorf("failed to render chart %s: %w", opts.ChartDir, err)
	}
	names := make([]string, 0, len(files))
	for name := range files {
		if strings.HasSuffix(name, ".yaml") {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	var objs []*unstructured.Unstructured
	for _, name := range names {
		docs, err := decode(files[name])
		if err != nil {
			return nil, fmt.Errorf("failed to decode %s: %w", name, err)
		}
		objs = append(objs, docs...)
	}
	sort.SliceStable(objs, func(i, j int) bool {
		return objs[i].GetKind() == "CustomResourceDefinition" && objs[j].GetKind() != "CustomResourceDefinition"
	})
	return objs, nil
}

// ReadValues reads a values file.
func ReadValues(path string) (map[string]any, error) {
	vals, err := chartutil.ReadValuesFile(path)
	if err != nil {
		return nil, fmt.Errorf("failed to read values file %s: %w", path, err)
	}
	return vals.AsMap(), nil
}

// DefaultChartDir is the chart's directory seen from this module's
// directory.
func DefaultChartDir(moduleDir string) string {
	return filepath.Join(moduleDir, "..", "local-volume-provisioner")
}

// MountUtilitiesChartDir is the mount-utilities chart's directory seen
// from this module's directory.
func MountUtilitiesChartDir(moduleDir string) string {
	return filepath.Join(moduleDir, "..", "mount-utilities")
}

// WriteYAML writes objects as one multi-document YAML stream.
func WriteYAML(w io.Writer, objs []*unstructured.Unstructured) error {
	for _, obj := range objs {
		data, err := yaml.Marshal(obj.Object)
		if err != nil {
			return fmt.Errorf("failed to encode %s %s: %w", obj.GetKind(), obj.GetName(), err)
		}
		if _, err := fmt.Fprintf(w, "---\n%s", data); err != nil {
			return fmt.Errorf("failed to write %s %s: %w", obj.GetKind(), obj.GetName(), err)
		}
	}
	return nil
}

func decode(manifest string) ([]*unstructured.Unstructured, error) {
	var objs []*unstructured.Unstructured
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader([]byte(manifest)), 4096)
	for {
		var m map[string]any
		if err := dec.Decode(&m); err != nil {
			if errors.Is(err, io.EOF) {
				return objs, nil
			}
			return nil, err
		}
		if len(m) == 0 {
			continue
		}
		objs = append(objs, &unstructured.Unstructured{Object: m})
	}
}
