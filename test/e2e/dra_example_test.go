//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeplug/nodeplug/test/e2e/framework"
	"github.com/nodeplug/nodeplug/test/utils/helmcmd"
)

// kubernetes-sigs/dra-example-driver as build/dra-example-driver/README.md
// installs it: its own chart, its default values but the registration
// directory.
const (
	draExampleModule    = "sigs.k8s.io/dra-example-driver"
	draExampleToolsDir  = "../../hack/tools/dra-example-driver"
	draExampleRelease   = "dra-example-driver"
	draExampleNamespace = "dra-example-driver"
	// draExampleName is the driver's and its DeviceClass's name with the
	// chart's default profile (gpu).
	draExampleName = "gpu.example.com"
)

// draExampleInstall installs kubernetes-sigs/dra-example-driver, built
// from its release by local-up, with helm and its own chart, only the
// registration directory moved to nodeplug's, and waits for an instance on
// every node. It creates a claim template for the chart's DeviceClass, and
// uninstalls everything when t ends.
func draExampleInstall(ctx context.Context, t *testing.T, c *framework.Cluster, regDir string) *draDriver {
	t.Helper()
	h := draExampleHelm(t, c)
	d := &draDriver{
		label: "dra-example-driver", name: draExampleName, namespace: draExampleNamespace, daemonSet: draExampleRelease + "-kubeletplugin",
		selector: "app.kubernetes.io/instance=" + draExampleRelease + ",app.kubernetes.io/component=kubeletplugin",
		template: "nodeplug-draex-e2e", devices: 8, command: "dra-example-kubeletplugin", podPrefix: "e2e-draex-",
		// The driver's CDI spec gives each device of a claim
		// <PROFILE>_DEVICE_<DEVICE>_RESOURCE_CLAIM=<claim UID>.
		claimEnv: func(claim *resourceapi.ResourceClaim) string { return "_RESOURCE_CLAIM=" + string(claim.UID) },
		// Its users change the chart's values: a new pod annotation.
		update: func(ctx context.Context, t *testing.T, _ *framework.Cluster) {
			h.run(ctx, t, "upgrade", draExampleRelease, h.chart, "--namespace", draExampleNamespace, "--reuse-values",
				"--set-string", "kubeletPlugin.podAnnotations.nodeplug-e2e-revision=2")
		},
	}
	h.run(ctx, t, "install", draExampleRelease, h.chart, "--namespace", draExampleNamespace, "--create-namespace",
		"--set", "kubeletPlugin.kubeletRegistrarDirectoryPath="+regDir)
	t.Cleanup(func() { draExampleUninstall(t, c, h, d) })
	draAwaitRollout(ctx, t, c, d, len(c.Nodes), nil)
	// The chart creates the DeviceClass (named after the driver); the
	// claims come from a template, as in the driver's demo.
	if _, err := c.Client.ResourceV1().DeviceClasses().Get(ctx, draExampleName, metav1.GetOptions{}); err != nil {
		t.Fatalf("the chart's DeviceClass %s: %v", draExampleName, err)
	}
	draCreateTemplate(ctx, t, c, d, draExampleName, nil)
	return d
}

// draHelm runs helm against the cluster (hack/e2e.sh builds the helm that
// hack/tools/helm pins) on the chart of the release
// hack/tools/dra-example-driver pins.
type draHelm struct {
	helmcmd.Command
	chart string
}

func draExampleHelm(t *testing.T, c *framework.Cluster) *draHelm {
	t.Helper()
	h := &draHelm{Command: helmcmd.Command{Bin: os.Getenv(helmcmd.Env), Kubeconfig: os.Getenv("KUBECONFIG"), Home: t.TempDir()}}
	if h.Bin == "" {
		h.Bin = filepath.Join(c.BinDir, "helm")
	}
	if _, err := os.Stat(h.Bin); err != nil {
		t.Fatalf("helm: %v (hack/e2e.sh builds it; or set %s)", err, helmcmd.Env)
	}
	// go mod download names the module's source in the module cache (and
	// fetches it from the module proxy if the cache lacks it).
	cmd := exec.CommandContext(t.Context(), "go", "mod", "download", "-json", draExampleModule)
	cmd.Dir = draExampleToolsDir
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go mod download %s in %s: %v", draExampleModule, draExampleToolsDir, err)
	}
	var mod struct{ Dir, Version, Error string }
	if err := json.Unmarshal(out, &mod); err != nil || mod.Dir == "" {
		t.Fatalf("go mod download %s: %v %s\n%s", draExampleModule, err, mod.Error, out)
	}
	h.chart = filepath.Join(mod.Dir, "deployments", "helm", "dra-example-driver")
	t.Logf("dra-example-driver %s, chart %s", mod.Version, h.chart)
	return h
}

func (h *draHelm) run(ctx context.Context, t *testing.T, args ...string) {
	t.Helper()
	if out, err := h.Run(ctx, args...); err != nil {
		t.Fatalf("helm %v: %v\n%s", args, err, out)
	}
}

// draExampleUninstall removes the release (the cases may have deleted its
// DaemonSet), the instances the cases orphaned, and the namespace.
func draExampleUninstall(t *testing.T, c *framework.Cluster, h *draHelm, d *draDriver) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	if out, err := h.Run(ctx, "uninstall", draExampleRelease, "--namespace", draExampleNamespace); err != nil {
		t.Errorf("helm uninstall %s: %v\n%s", draExampleRelease, err, out)
	}
	draUndeploy(t, c, d)
	_ = c.Client.CoreV1().Namespaces().Delete(ctx, draExampleNamespace, metav1.DeleteOptions{})
}
