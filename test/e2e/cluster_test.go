//go:build e2e

package e2e

import (
	"os/exec"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeplug/nodeplug/test/e2e/framework"
)

// TestNodeplugBinariesRunTheCluster: the node is Ready, and the kubelet and
// kube-controller-manager that run it are nodeplug's builds.
func TestNodeplugBinariesRunTheCluster(t *testing.T) {
	c := framework.Connect(t)
	node, err := c.Client.CoreV1().Nodes().Get(t.Context(), c.NodeName, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get node: %v", err)
	}
	if !framework.NodeReady(node) {
		t.Fatalf("node %s is not Ready: %+v", c.NodeName, node.Status.Conditions)
	}
	if v := node.Status.NodeInfo.KubeletVersion; !strings.HasPrefix(v, "v1.37.") {
		t.Errorf("node reports kubelet %s, want the embedded upstream v1.37.x", v)
	}
	for _, component := range []string{"kubelet", "kube-controller-manager"} {
		exe, err := c.ComponentBinary(t, component)
		if err != nil {
			t.Fatalf("%s: %v", component, err)
		}
		out, err := exec.CommandContext(t.Context(), exe, "--version").CombinedOutput()
		if err != nil || !strings.Contains(string(out), "nodeplug v") {
			t.Errorf("%s (%s) --version = %q, %v; want nodeplug's build", component, exe, out, err)
		}
	}
}

// TestBusyboxPodExec: a busybox pod runs and kubectl exec reaches it.
func TestBusyboxPodExec(t *testing.T) {
	c := framework.Connect(t)
	ctx := t.Context()
	c.CreatePod(ctx, t, framework.BusyboxPod("e2e-exec", "sleep 3600"))
	c.WaitForPod(ctx, t, "e2e-exec", 90*time.Second, corev1.PodRunning)
	out, err := c.Kubectl(ctx, "exec", "e2e-exec", "--", "sh", "-c", "echo hello from $(hostname)")
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(out); got != "hello from e2e-exec" {
		t.Fatalf("exec output %q, want %q", got, "hello from e2e-exec")
	}
}

// TestPodReachesKubernetesService: a pod reaches the apiserver through the
// kubernetes Service's ClusterIP, which the kubelet puts in every pod's
// environment; kube-proxy's rules carry it to the apiserver.
func TestPodReachesKubernetesService(t *testing.T) {
	c := framework.Connect(t)
	ctx := t.Context()
	c.CreatePod(ctx, t, framework.BusyboxPod("e2e-service", "sleep 3600"))
	c.WaitForPod(ctx, t, "e2e-service", 90*time.Second, corev1.PodRunning)
	// busybox's static wget crashes here, so nc speaks plain HTTP to the
	// TLS port: only Go's TLS server answers with this message.
	script := `echo "$KUBERNETES_SERVICE_HOST"; ` +
		`printf 'GET /version HTTP/1.0\r\n\r\n' | nc -w 5 "$KUBERNETES_SERVICE_HOST" "$KUBERNETES_SERVICE_PORT"`
	out, err := c.Kubectl(ctx, "exec", "e2e-service", "--", "sh", "-c", script)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if !strings.HasPrefix(out, "10.0.0.1\n") || !strings.Contains(out, "Client sent an HTTP request to an HTTPS server") {
		t.Fatalf("request through the kubernetes Service: %q; want the ClusterIP 10.0.0.1 and the apiserver's answer", out)
	}
}
