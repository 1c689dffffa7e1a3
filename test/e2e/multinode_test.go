//go:build e2e

package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeplug/nodeplug/pkg/util/testutil"
	"github.com/nodeplug/nodeplug/test/e2e/framework"
)

// TestMultiNode checks the nodes of `make local-up NODES=N` (N > 1; it is
// skipped on a cluster of one node): every node is Ready and runs a pod;
// the pods on different nodes reach each other by pod IP, and each reaches
// the kubernetes Service; and a privileged pod's
// `nsenter --mount=/rootfs/proc/1/ns/mnt`, as upstream's e2e host-exec pods
// run it, lands in the pod's own node: it sees that node's
// /var/lib/kubelet (with this pod in it and no pod of another node) and,
// with --uts too, the node's name.
func TestMultiNode(t *testing.T) {
	c := framework.Connect(t)
	ctx := t.Context()
	nodes, err := c.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("list nodes: %v", err)
	}
	if len(nodes.Items) < 2 {
		testutil.MissingCapability(t, "the cluster has %d node; this test needs 2 or more (make local-up NODES=3)", len(nodes.Items))
	}
	pods := make([]*corev1.Pod, len(nodes.Items))
	for i := range nodes.Items {
		node := &nodes.Items[i]
		if !framework.NodeReady(node) {
			t.Fatalf("node %s is not Ready: %+v", node.Name, node.Status.Conditions)
		}
		pods[i] = createNodePod(t, c, fmt.Sprintf("e2e-multinode-%d", i), node.Name)
	}
	for i := range pods {
		pods[i] = c.WaitForPod(ctx, t, pods[i].Name, 90*time.Second, corev1.PodRunning)
	}
	for _, from := range pods {
		for _, to := range pods {
			if from.Spec.NodeName == to.Spec.NodeName {
				continue
			}
			script := fmt.Sprintf(`printf 'GET / HTTP/1.0\r\n\r\n' | nc -w 5 %s 8080`, to.Status.PodIP)
			out, err := c.Kubectl(ctx, "exec", from.Name, "--", "sh", "-c", script)
			if err != nil || !strings.Contains(out, "hello from "+to.Name) {
				t.Errorf("pod %s (node %s) to pod %s at %s (node %s): %q, %v; want its answer",
					from.Name, from.Spec.NodeName, to.Name, to.Status.PodIP, to.Spec.NodeName, out, err)
			}
		}
		script := `printf 'GET /version HTTP/1.0\r\n\r\n' | nc -w 5 "$KUBERNETES_SERVICE_HOST" "$KUBERNETES_SERVICE_PORT"`
		out, err := c.Kubectl(ctx, "exec", from.Name, "--", "sh", "-c", script)
		if err != nil || !strings.Contains(out, "Client sent an HTTP request to an HTTPS server") {
			t.Errorf("pod %s (node %s) through the kubernetes Service: %q, %v; want the apiserver's answer",
				from.Name, from.Spec.NodeName, out, err)
		}
		checkNodeExec(t, c, from, pods)
	}
}

// checkNodeExec enters pod's node as upstream's host-exec pods do and checks
// that it is pod's node and no other.
func checkNodeExec(t *testing.T, c *framework.Cluster, pod *corev1.Pod, all []*corev1.Pod) {
	t.Helper()
	ctx := t.Context()
	out, err := c.Kubectl(ctx, "exec", pod.Name, "--", "nsenter", "--mount=/rootfs/proc/1/ns/mnt",
		"--uts=/rootfs/proc/1/ns/uts", "--", "sh", "-c", "cat /proc/sys/kernel/hostname; ls /var/lib/kubelet/pods")
	if err != nil {
		t.Errorf("nsenter from pod %s into its node: %v", pod.Name, err)
		return
	}
	lines := strings.Fields(out)
	if len(lines) == 0 || lines[0] != pod.Spec.NodeName {
		t.Errorf("nsenter from pod %s: host name %q, want its node %s", pod.Name, out, pod.Spec.NodeName)
	}
	for _, other := range all {
		seen := strings.Contains(out, string(other.UID))
		if want := other.Spec.NodeName == pod.Spec.NodeName; seen != want {
			t.Errorf("nsenter from pod %s (node %s): /var/lib/kubelet/pods has pod %s (node %s): %v, want %v",
				pod.Name, pod.Spec.NodeName, other.Name, other.Spec.NodeName, seen, want)
		}
	}
}

// createNodePod creates a privileged busybox pod on node that serves
// "hello from <pod>" on port 8080 and has the node's / at /rootfs, as
// upstream's host-exec pods do; it is deleted when t ends.
func createNodePod(t *testing.T, c *framework.Cluster, name, node string) *corev1.Pod {
	t.Helper()
	pod := framework.BusyboxPod(name, `mkdir -p /www && echo "hello from $(hostname)" >/www/index.html && exec httpd -f -p 8080 -h /www`)
	pod.Namespace = "default"
	pod.Spec.NodeName = node
	zero, privileged := int64(0), true
	pod.Spec.TerminationGracePeriodSeconds = &zero
	pod.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{Privileged: &privileged}
	pod.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "rootfs", MountPath: "/rootfs"}}
	pod.Spec.Volumes = []corev1.Volume{{Name: "rootfs", VolumeSource: corev1.VolumeSource{
		HostPath: &corev1.HostPathVolumeSource{Path: "/"},
	}}}
	created, err := c.Client.CoreV1().Pods("default").Create(t.Context(), pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create pod %s: %v", name, err)
	}
	t.Cleanup(func() { c.DeletePod(t, name) })
	return created
}
