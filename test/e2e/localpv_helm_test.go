//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodeplug/nodeplug/test/e2e/framework"
)

// chartRenderModule renders deploy/helm/local-volume-provisioner with
// Helm's Go library; it is a module of its own, so the e2e suite runs it
// with go run instead of importing Helm.
const chartRenderModule = "../../deploy/helm/chartrender"

// TestLocalPVHelmChart installs the provisioner from the Helm chart,
// rendered from a values file written in the upstream chart's keys, and
// checks that a directory and a loop device are published with the
// values' classes and PV labels.
func TestLocalPVHelmChart(t *testing.T) {
	c := framework.Connect(t)
	ctx := t.Context()
	disks := newLPVDisks(t, c)
	vol0 := disks.addDir("vol0")
	blk0 := disks.addLoop("blk0")
	deployChart(ctx, t, c, disks)

	for path, class := range map[string]string{vol0: "helm-fast", blk0: "helm-block"} {
		pv := waitForPV(ctx, t, c, path, "", corev1.VolumeAvailable)
		if pv.Spec.StorageClassName != class || pv.Labels["e2e.nodeplug.io/chart"] != "upstream-values" {
			t.Errorf("PV %s for %s: class %q, labels %v; want class %s and the values' labelsForPV", pv.Name, path,
				pv.Spec.StorageClassName, pv.Labels, class)
		}
	}
}

// deployChart renders the chart as release local-volume-provisioner in
// namespace local-volume-provisioner (the kustomize manifests' names, so
// undeployLPV removes it) and applies it with the namespace manifest.
func deployChart(ctx context.Context, t *testing.T, c *framework.Cluster, d *lpvDisks) {
	t.Helper()
	dir := t.TempDir()
	values := filepath.Join(dir, "values.yaml")
	if err := os.WriteFile(values, []byte(fmt.Sprintf(`useJobForCleaning: true
useNodeNameOnly: true
labelsForPV:
  e2e.nodeplug.io/chart: upstream-values
classes:
- name: helm-fast
  hostDir: %s
  mountDir: /mnt/fast-disks
  storageClass: true
- name: helm-block
  hostDir: %s
  mountDir: /mnt/block-disks
  volumeMode: Block
  blockCleanerCommand: ["/scripts/quick_reset.sh"]
  storageClass:
    reclaimPolicy: Delete
`, d.fast, d.block)), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, "go", "run", "./cmd/render", "-f", values,
		"-release", "local-volume-provisioner", "-namespace", lpvNamespace)
	cmd.Dir = chartRenderModule
	var stderr strings.Builder
	cmd.Stderr = &stderr
	rendered, err := cmd.Output()
	if err != nil {
		t.Fatalf("render the chart: %v\n%s", err, stderr.String())
	}
	ns, err := os.ReadFile("../../deploy/local-volume-provisioner/namespace.yaml")
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "chart.yaml")
	if err := os.WriteFile(file, framework.ManifestImages(append(append(ns, '\n'), rendered...)), 0o644); err != nil {
		t.Fatal(err)
	}
	applyLPV(ctx, t, c, file)
}
