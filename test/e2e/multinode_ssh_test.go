//go:build e2e

package e2e

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeplug/nodeplug/test/e2e/framework"
)

// TestNodesOverSSH reaches every namespaced node and the control plane as
// upstream's e2e framework does (provider local: the cluster's key, user
// root, port 22 on the node's address and on the kubeconfig's host), with
// the OpenSSH client, and runs there what upstream's specs run: sudo,
// systemctl's queries with their exit codes, crictl finding a pod's
// container on the node's own runtime, and a flex driver directory made on
// the control plane, which must be the controller-manager's.
func TestNodesOverSSH(t *testing.T) {
	c := framework.Connect(t)
	c.RequireNodes(t, 2)
	ctx := t.Context()
	key := filepath.Join(c.Dir(t), "ssh", "id_ed25519")
	if _, err := os.Stat(key); err != nil {
		t.Fatalf("no SSH key from local-up: %v", err)
	}
	for _, n := range c.Nodes {
		ip := internalIP(ctx, t, c, n.Name)
		cases := []sshCase{
			{"its own host name", "hostname", 0, n.Name},
			{"sudo", "sudo --version >/dev/null && echo ok", 0, "ok"},
			{"kubelet active", "systemctl show kubelet --property ActiveState --value", 0, "active"},
			{"every unit active", "systemctl is-active containerd kubelet kube-proxy ssh", 0, "active\nactive\nactive\nactive"},
			{"status of a unit that does not exist", "systemctl status nothere", 4, ""},
			{"start of a unit that does not exist", "sudo systemctl start nothere", 5, ""},
			{"the node's own mounts, shared", "findmnt -no PROPAGATION /", 0, "shared"},
			crictlCase(ctx, t, c, n.Name),
		}
		for _, tc := range cases {
			t.Run(n.Name+"/"+tc.name, func(t *testing.T) {
				out, rc := sshRun(ctx, t, c, key, ip, tc.cmd)
				if rc != tc.wantRC || (tc.wantOut != "" && strings.TrimSpace(out) != tc.wantOut) {
					t.Fatalf("ssh %s %q: exit %d, output %q; want exit %d, output %q", ip, tc.cmd, rc, out, tc.wantRC, tc.wantOut)
				}
			})
		}
	}
	t.Run("control plane sees the controller-manager's flex dir", func(t *testing.T) {
		dir := "/usr/libexec/kubernetes/kubelet-plugins/volume/exec/e2e.ssh~probe"
		if out, rc := sshRun(ctx, t, c, key, "127.0.0.1", "sudo mkdir -p "+dir); rc != 0 {
			t.Fatalf("mkdir over SSH: exit %d: %s", rc, out)
		}
		made := filepath.Join(c.ControllerFlexDir(t), "e2e.ssh~probe")
		t.Cleanup(func() { _ = os.RemoveAll(made) })
		if _, err := os.Stat(made); err != nil {
			t.Fatalf("a directory made over SSH in upstream's default flex dir is not in the controller-manager's %s: %v", c.ControllerFlexDir(t), err)
		}
	})
}

// sshCase is a command run on a node over SSH, with the exit code and the
// output (when not empty) it must give.
type sshCase struct {
	name, cmd string
	wantRC    int
	wantOut   string
}

// crictlCase asks the node's crictl for the container of a pod running on
// it, as upstream's subPath spec does before `crictl stop`: by the pod's
// UID and the container's name. Exactly one ID must come back.
func crictlCase(ctx context.Context, t *testing.T, c *framework.Cluster, node string) sshCase {
	t.Helper()
	pods, err := c.Client.CoreV1().Pods(metav1.NamespaceAll).List(ctx, metav1.ListOptions{
		FieldSelector: "spec.nodeName=" + node + ",status.phase=Running"})
	if err != nil {
		t.Fatal(err)
	}
	if len(pods.Items) == 0 {
		t.Fatalf("no pod runs on %s to look for with crictl", node)
	}
	p := pods.Items[0]
	cmd := "crictl ps --label io.kubernetes.pod.uid=" + string(p.UID) + " --name '^" + p.Spec.Containers[0].Name + "$' -q | wc -l"
	return sshCase{"crictl finds pod " + p.Namespace + "/" + p.Name + "'s container", cmd, 0, "1"}
}

// internalIP is the node's InternalIP, where upstream's framework
// connects when a node has no ExternalIP.
func internalIP(ctx context.Context, t *testing.T, c *framework.Cluster, name string) string {
	t.Helper()
	node, err := c.Client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range node.Status.Addresses {
		if a.Type == corev1.NodeInternalIP {
			return a.Address
		}
	}
	t.Fatalf("node %s has no InternalIP", name)
	return ""
}

// sshRun runs cmd as root on addr with the cluster's key and returns its
// output and exit code (255 is ssh's own failure).
func sshRun(ctx context.Context, t *testing.T, c *framework.Cluster, key, addr, cmd string) (string, int) {
	t.Helper()
	out, err := exec.CommandContext(ctx, "ssh", "-i", key, "-o", "BatchMode=yes", "-o", "ConnectTimeout=5",
		"-o", "UserKnownHostsFile="+filepath.Join(c.Dir(t), "ssh", "known_hosts"), "-o", "StrictHostKeyChecking=yes",
		"root@"+addr, cmd).CombinedOutput()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return string(out), 0
	case errors.As(err, &exit):
		if exit.ExitCode() == 255 {
			t.Fatalf("ssh to %s failed: %s", addr, out)
		}
		return string(out), exit.ExitCode()
	}
	t.Fatalf("ssh to %s: %v", addr, err)
	return "", 0
}
