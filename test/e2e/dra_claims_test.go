//go:build e2e

package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeplug/nodeplug/test/e2e/framework"
)

// draClaimPods creates, on each of nodes, a pod named <prefix>-<node> with
// a claim from the driver's template (the scheduler places it: a pod
// bound to a node by name skips allocation), and waits until all run,
// failing t otherwise. They are deleted when owner (t or a test that
// contains it) ends.
func draClaimPods(ctx context.Context, t *testing.T, owner testing.TB, c *framework.Cluster, d *draDriver, prefix string, nodes []*framework.Node) map[string]*corev1.Pod {
	t.Helper()
	for _, n := range nodes {
		pod := framework.BusyboxPod(prefix+"-"+n.Name, "env; sleep 3600")
		pod.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
				MatchFields: []corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{n.Name}}},
			}}},
		}}
		tmpl := d.template
		pod.Spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "dev", ResourceClaimTemplateName: &tmpl}}
		pod.Spec.Containers[0].Resources.Claims = []corev1.ResourceClaim{{Name: "dev"}}
		pod.Namespace = "default"
		zero := int64(0)
		pod.Spec.TerminationGracePeriodSeconds = &zero
		if _, err := c.Client.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create pod %s: %v", pod.Name, err)
		}
		owner.Cleanup(func() { c.DeletePod(owner, pod.Name) })
	}
	pods := map[string]*corev1.Pod{}
	for _, n := range nodes {
		pods[n.Name] = c.WaitForPod(ctx, t, prefix+"-"+n.Name, 90*time.Second, corev1.PodRunning)
	}
	return pods
}

// draPodsByPrefix returns the default namespace's pods whose name starts
// with prefix.
func draPodsByPrefix(ctx context.Context, t *testing.T, c *framework.Cluster, prefix string) []*corev1.Pod {
	t.Helper()
	l, err := c.Client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var pods []*corev1.Pod
	for i := range l.Items {
		if strings.HasPrefix(l.Items[i].Name, prefix) {
			pods = append(pods, &l.Items[i])
		}
	}
	return pods
}

// draRequireClaim checks that pod runs on n with its claim allocated from
// n's pool and reserved for it, that the driver wrote a CDI spec for the
// claim on n with the driver's environment variable for it (d.claimEnv),
// and that the container sees that variable.
func draRequireClaim(ctx context.Context, t *testing.T, c *framework.Cluster, d *draDriver, pod *corev1.Pod, n *framework.Node) *resourceapi.ResourceClaim {
	t.Helper()
	if pod.Spec.NodeName != n.Name {
		t.Fatalf("pod %s runs on %s, want %s", pod.Name, pod.Spec.NodeName, n.Name)
	}
	if len(pod.Status.ResourceClaimStatuses) != 1 || pod.Status.ResourceClaimStatuses[0].ResourceClaimName == nil {
		t.Fatalf("pod %s: claim statuses %v, want the claim made from %s", pod.Name, pod.Status.ResourceClaimStatuses, d.template)
	}
	name := *pod.Status.ResourceClaimStatuses[0].ResourceClaimName
	claim, err := c.Client.ResourceV1().ResourceClaims("default").Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	alloc := claim.Status.Allocation
	if alloc == nil || len(alloc.Devices.Results) != 1 {
		t.Fatalf("claim %s of pod %s: allocation %+v, want one device", name, pod.Name, alloc)
	}
	if r := alloc.Devices.Results[0]; r.Driver != d.name || r.Pool != n.Name {
		t.Errorf("claim %s: device %s/%s/%s, want one of %s in pool %s", name, r.Driver, r.Pool, r.Device, d.name, n.Name)
	}
	reserved := false
	for _, ref := range claim.Status.ReservedFor {
		reserved = reserved || ref.UID == pod.UID
	}
	if !reserved {
		t.Errorf("claim %s is not reserved for pod %s: %+v", name, pod.Name, claim.Status.ReservedFor)
	}
	env := d.claimEnv(claim)
	spec, raw := draCDISpec(t, n, claim)
	if !strings.Contains(string(raw), env) {
		t.Errorf("the CDI spec %s does not set %s: %s", spec, env, raw)
	}
	logs, err := c.Kubectl(ctx, "logs", "-n", "default", pod.Name)
	if err != nil {
		t.Fatal(err)
	}
	// The cluster's containerd (2.x) applies the claim's CDI devices.
	if !strings.Contains(logs, env) {
		t.Errorf("pod %s does not see %s from its device's CDI spec:\n%s", pod.Name, env, logs)
	}
	return claim
}

// draRequireUntouched checks that pod still runs its first container.
func draRequireUntouched(ctx context.Context, t *testing.T, c *framework.Cluster, pod *corev1.Pod) {
	t.Helper()
	now, err := c.Client.CoreV1().Pods("default").Get(ctx, pod.Name, metav1.GetOptions{})
	if err != nil {
		t.Errorf("pod %s: %v", pod.Name, err)
		return
	}
	if now.Status.Phase != corev1.PodRunning || krContainer(now) != krContainer(pod) {
		t.Errorf("pod %s: %s, container %s; want Running with %s", pod.Name, now.Status.Phase, krContainer(now), krContainer(pod))
	}
}

// draCDISpec returns the path and content of the one CDI spec on n whose
// name has claim's UID (each driver names its specs its own way).
func draCDISpec(t *testing.T, n *framework.Node, claim *resourceapi.ResourceClaim) (string, []byte) {
	t.Helper()
	dir := n.HostPath(t, "/run/cdi")
	specs, _ := filepath.Glob(filepath.Join(dir, "*"+string(claim.UID)+"*"))
	if len(specs) != 1 {
		t.Fatalf("the driver's CDI spec for claim %s on node %s: %d files in %s name its UID %s, want 1", claim.Name, n.Name, len(specs), dir, claim.UID)
	}
	raw, err := os.ReadFile(specs[0])
	if err != nil {
		t.Fatalf("the driver's CDI spec for claim %s on node %s: %v", claim.Name, n.Name, err)
	}
	return specs[0], raw
}

// draRequirePreparedBy checks that the driver instance in pod prepared
// claim: its log names the claim's UID (both drivers log each claim they
// prepare).
func draRequirePreparedBy(ctx context.Context, t *testing.T, c *framework.Cluster, d *draDriver, driver *corev1.Pod, claim *resourceapi.ResourceClaim) {
	t.Helper()
	if driver == nil {
		t.Fatalf("no driver instance for claim %s", claim.Name)
	}
	logs, err := c.Kubectl(ctx, "logs", "-n", d.namespace, driver.Name)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(logs, string(claim.UID)) {
		t.Errorf("claim %s (%s) was not prepared by the new driver instance %s on %s", claim.Name, claim.UID, driver.Name, driver.Spec.NodeName)
	}
}
