//go:build e2e

package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"

	"github.com/nodeplug/nodeplug/pkg/util/testutil"
	"github.com/nodeplug/nodeplug/test/e2e/framework"
)

// clusterDNSIP is the kube-dns Service's address, the kubelets' clusterDNS
// (hack/lib/node-config.sh, deploy/coredns).
const clusterDNSIP = "10.0.0.10"

// dnsScript runs in a busybox pod with the kubelet's resolv.conf
// (nameserver clusterDNS, the cluster's search path, ndots:5). Busybox's
// nslookup asks for the name as given, without the search path, so the
// short name is looked up by ping, which resolves through libc as an
// application does (it prints "PING name (address)" once the name
// resolves; the Service's address need not answer). Each lookup is
// retried a few times against a lost UDP packet. The last lines are the
// results, "result KEY=VALUE", after each command's own output.
const dnsScript = `
fqdn() { nslookup "$1" 2>&1 | awk '/^Name:/ {n = 1} n && /^Address/ {print $2; exit}'; }
short() { ping -c 1 -W 1 "$1" 2>&1 | sed -n 's/^PING [^ ]* (\([0-9.]*\)).*/\1/p'; }
try() {
  for i in 1 2 3 4 5; do
    out=$("$@")
    [ -n "$out" ] && break
    sleep 1
  done
  echo "$out"
}
cat /etc/resolv.conf
nslookup kubernetes.default.svc.cluster.local
ping -c 1 -W 1 "$SERVICE"
k=$(try fqdn kubernetes.default.svc.cluster.local)
s=$(try short "$SERVICE")
f=$(try fqdn "$SERVICE.default.svc.cluster.local")
missing=other
for i in 1 2 3 4 5; do
  if nslookup "$MISSING.default.svc.cluster.local" >/tmp/out 2>&1; then missing=resolved; break; fi
  if grep -q NXDOMAIN /tmp/out; then missing=NXDOMAIN; break; fi
  sleep 1
done
cat /tmp/out
short_missing=$(short "$MISSING")
echo "result kubernetes=$k"
echo "result short=$s"
echo "result fqdn=$f"
echo "result missing=$missing"
echo "result short-missing=${short_missing:-none}"
`

// TestClusterDNS: local-up's CoreDNS (deploy/coredns) answers a pod on
// every node at the kubelets' clusterDNS: the kubernetes Service's name
// resolves to its clusterIP, a Service the test creates resolves by its
// short name (through the pod's search path) and its full name, and a name
// that no Service has fails with NXDOMAIN, by either name.
func TestClusterDNS(t *testing.T) {
	c := framework.Connect(t)
	ctx := t.Context()
	requireClusterDNS(ctx, t, c)
	apiSvc, err := c.Client.CoreV1().Services("default").Get(ctx, "kubernetes", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	suffix := rand.String(5)
	svc := createDNSService(ctx, t, c, "dns-e2e-"+suffix)
	missing := "dns-e2e-missing-" + suffix
	want := map[string]string{
		"kubernetes":    apiSvc.Spec.ClusterIP,
		"short":         svc.Spec.ClusterIP,
		"fqdn":          svc.Spec.ClusterIP,
		"missing":       "NXDOMAIN",
		"short-missing": "none",
	}
	for _, n := range c.Nodes {
		pod := framework.BusyboxPod("dns-e2e-"+suffix+"-"+n.Name, dnsScript)
		pod.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "SERVICE", Value: svc.Name}, {Name: "MISSING", Value: missing}}
		c.CreatePodOn(ctx, t, pod, n.Name)
	}
	for _, n := range c.Nodes {
		t.Run(n.Name, func(t *testing.T) {
			name := "dns-e2e-" + suffix + "-" + n.Name
			c.WaitForPod(ctx, t, name, 2*time.Minute, corev1.PodSucceeded)
			logs, err := c.Client.CoreV1().Pods("default").GetLogs(name, &corev1.PodLogOptions{}).DoRaw(ctx)
			if err != nil {
				t.Fatal(err)
			}
			got := dnsResults(string(logs))
			for key, w := range want {
				if got[key] != w {
					t.Errorf("%s: %q, want %q", key, got[key], w)
				}
			}
			if t.Failed() {
				t.Logf("the pod's output:\n%s", logs)
			}
		})
	}
}

// requireClusterDNS ends t unless the cluster has kube-dns at clusterDNSIP
// with ready CoreDNS pods behind it.
func requireClusterDNS(ctx context.Context, t *testing.T, c *framework.Cluster) {
	t.Helper()
	svc, err := c.Client.CoreV1().Services("kube-system").Get(ctx, "kube-dns", metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		testutil.MissingCapability(t, "no kube-dns Service: the cluster was brought up with LOCAL_UP_DNS=false")
	}
	if err != nil {
		t.Fatal(err)
	}
	if svc.Spec.ClusterIP != clusterDNSIP {
		t.Fatalf("kube-dns is at %s, want the kubelets' clusterDNS %s", svc.Spec.ClusterIP, clusterDNSIP)
	}
	if _, err := c.Kubectl(ctx, "-n", "kube-system", "rollout", "status", "deployment/coredns", "--timeout=120s"); err != nil {
		out, _ := c.Kubectl(ctx, "-n", "kube-system", "get", "pods", "-l", "k8s-app=kube-dns", "-o", "wide")
		t.Fatalf("CoreDNS is not rolled out: %v\npods:\n%s", err, out)
	}
}

// createDNSService creates a ClusterIP Service without a selector (DNS
// answers for it all the same) and deletes it when t ends.
func createDNSService(ctx context.Context, t *testing.T, c *framework.Cluster, name string) *corev1.Service {
	t.Helper()
	svc, err := c.Client.CoreV1().Services("default").Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create Service %s: %v", name, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := c.Client.CoreV1().Services("default").Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("delete Service %s: %v", name, err)
		}
	})
	if svc.Spec.ClusterIP == "" || svc.Spec.ClusterIP == corev1.ClusterIPNone {
		t.Fatalf("Service %s has no clusterIP", name)
	}
	return svc
}

// dnsResults parses dnsScript's "result KEY=VALUE" lines.
func dnsResults(logs string) map[string]string {
	out := map[string]string{}
	for _, l := range strings.Split(logs, "\n") {
		if kv, ok := strings.CutPrefix(l, "result "); ok {
			k, v, _ := strings.Cut(kv, "=")
			out[k] = v
		}
	}
	return out
}
