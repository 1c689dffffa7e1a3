package helm

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/nodeplug/nodeplug/pkg/util/testutil"
	"github.com/nodeplug/nodeplug/test/integration/framework"
	"github.com/nodeplug/nodeplug/test/utils/helmcmd"
)

const (
	release   = "lvp"
	namespace = "storage"
	// The chart's objects are named <release>-local-volume-provisioner-*.
	prefix = release + "-local-volume-provisioner"
)

// keptOnUninstall is what helm uninstall leaves by design: the NodeDiskState
// CRD, which the chart marks helm.sh/resource-policy: keep so that an
// uninstall does not delete every node's inventory, the APIService the
// apiserver registers for it, and the CRD of the memory of unwiped disks,
// kept the same way: every installation shares it, and a reinstall still
// holds the disks it remembers.
var keptOnUninstall = []string{
	"customresourcedefinitions.apiextensions.k8s.io /nodediskstates.localpv.nodeplug.io",
	"customresourcedefinitions.apiextensions.k8s.io /unwipeddisks.localpv.nodeplug.io",
	"apiservices.apiregistration.k8s.io /v1alpha1.localpv.nodeplug.io",
}

// TestHelmLifecycle drives the chart through a release's life with the
// helm command: every step is one helm invocation against the apiserver,
// checked by what the apiserver then holds.
func TestHelmLifecycle(t *testing.T) {
	h := newHelm(t)
	cp := framework.StartAPIServer(t)
	h.Kubeconfig = writeKubeconfig(t, cp.Config)
	ctx := t.Context()
	setUpCluster(ctx, t, cp)
	before := snapshot(ctx, t, cp.Config)

	steps := []struct {
		name    string
		args    []string
		wantErr string
		check   func(t *testing.T)
	}{
		{name: "install with the chart's defaults", args: []string{"install", release, h.chart, "-n", namespace},
			check: func(t *testing.T) {
				h.wantRevision(t, 1, "deployed")
				wantMaster(ctx, t, cp, "nodeplug/local-volume-provisioner:dev")
			}},
		{name: "upgrade with the defaults of lsp's chart", args: []string{"upgrade", release, h.chart, "-n", namespace, "-f", "testdata/lsp-chart-defaults.yaml"},
			check: func(t *testing.T) {
				h.wantRevision(t, 2, "deployed")
				wantClass(ctx, t, cp, "fast-disks")
			}},
		{name: "upgrade naming the upstream provisioner's image is refused",
			args:    []string{"upgrade", release, h.chart, "-n", namespace, "-f", "testdata/lsp-chart-defaults.yaml", "--set", "image=registry.k8s.io/sig-storage/local-volume-provisioner:v2.8.0"},
			wantErr: "the upstream provisioner's image",
			check:   func(t *testing.T) { h.wantRevision(t, 2, "deployed") }},
		{name: "upgrade with a tuned values file of lsp's chart", args: []string{"upgrade", release, h.chart, "-n", namespace, "-f", h.upstreamValues},
			check: func(t *testing.T) {
				h.wantRevision(t, 3, "deployed")
				wantClass(ctx, t, cp, "raw-disks")
				// The snapshot sees the release, so the uninstall check below
				// can see what it leaves.
				diff := compare(before, snapshot(ctx, t, cp.Config))
				for _, want := range []string{"deployments.apps " + namespace + "/" + prefix + "-master",
					"secrets " + namespace + "/sh.helm.release.v1." + release + ".v3", "servicemonitors.monitoring.coreos.com monitoring/" + prefix} {
					if !strings.Contains(diff, "+ "+want+"\n") {
						t.Errorf("the snapshot after the upgrade has no %s:\n%s", want, diff)
					}
				}
			}},
		{name: "uninstall leaves nothing but the kept CRD and memory", args: []string{"uninstall", release, "-n", namespace, "--wait"},
			check: func(t *testing.T) {
				if diff := compare(before, snapshot(ctx, t, cp.Config), keptOnUninstall...); diff != "" {
					t.Errorf("objects left or changed by the release:\n%s", diff)
				}
			}},
	}
	for _, s := range steps {
		// Each step builds on the one before: stop at the first failure.
		if !t.Run(s.name, func(t *testing.T) {
			out, err := h.run(t, s.args...)
			switch {
			case s.wantErr == "" && err != nil:
				t.Fatalf("helm %s: %v\n%s", strings.Join(s.args, " "), err, out)
			case s.wantErr != "" && (err == nil || !strings.Contains(out, s.wantErr)):
				t.Fatalf("helm %s: error %v, want one saying %q\n%s", strings.Join(s.args, " "), err, s.wantErr, out)
			}
			s.check(t)
		}) {
			return
		}
	}
}

// helm runs the helm command against one apiserver, with its own
// configuration, cache and data directories.
type helm struct {
	helmcmd.Command
	chart, upstreamValues string
}

func newHelm(t *testing.T) *helm {
	t.Helper()
	bin := os.Getenv(helmcmd.Env)
	if bin == "" {
		testutil.MissingCapability(t, "needs the helm command: NODEPLUG_HELM is unset (hack/test-integration.sh builds hack/tools/helm and sets it)")
	}
	root, err := filepath.Abs("../../..")
	if err != nil {
		t.Fatal(err)
	}
	return &helm{
		Command:        helmcmd.Command{Bin: bin, Home: t.TempDir()},
		chart:          filepath.Join(root, "deploy/helm/local-volume-provisioner"),
		upstreamValues: filepath.Join(root, "deploy/helm/chartrender/testdata/upstream-values.yaml"),
	}
}

func (h *helm) run(t *testing.T, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	return h.Run(ctx, args...)
}

// wantRevision checks helm's record of the release: its last revision and
// that revision's status.
func (h *helm) wantRevision(t *testing.T, revision int, status string) {
	t.Helper()
	out, err := h.run(t, "status", release, "-n", namespace, "-o", "json")
	if err != nil {
		t.Fatalf("helm status: %v\n%s", err, out)
	}
	var got struct {
		Version int
		Info    struct{ Status string }
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("helm status -o json: %v\n%.400s", err, out)
	}
	if got.Version != revision || got.Info.Status != status {
		t.Errorf("release at revision %d (%s), want %d (%s)", got.Version, got.Info.Status, revision, status)
	}
}

// setUpCluster makes what the release expects and does not own: its
// namespace, the monitoring namespace and a stand-in for prometheus-
// operator's ServiceMonitor CRD (the tuned values turn serviceMonitor on).
func setUpCluster(ctx context.Context, t *testing.T, cp *framework.ControlPlane) {
	t.Helper()
	for _, ns := range []string{namespace, "monitoring"} {
		if _, err := cp.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	createServiceMonitorCRD(ctx, t, cp.Config)
}

func writeKubeconfig(t *testing.T, cfg *rest.Config) string {
	t.Helper()
	c := clientcmdapi.NewConfig()
	c.Clusters["it"] = &clientcmdapi.Cluster{Server: cfg.Host, TLSServerName: cfg.ServerName, CertificateAuthority: cfg.CAFile, CertificateAuthorityData: cfg.CAData}
	c.AuthInfos["it"] = &clientcmdapi.AuthInfo{Token: cfg.BearerToken, ClientCertificate: cfg.CertFile, ClientKey: cfg.KeyFile,
		ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData}
	c.Contexts["it"] = &clientcmdapi.Context{Cluster: "it", AuthInfo: "it"}
	c.CurrentContext = "it"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*c, path); err != nil {
		t.Fatal(err)
	}
	return path
}
