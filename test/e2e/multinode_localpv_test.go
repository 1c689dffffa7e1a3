//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/nodeplug/nodeplug/pkg/localpv/jobs"
	"github.com/nodeplug/nodeplug/test/e2e/framework"
)

// TestMultiNodeLocalPV runs the distributed provisioner from
// deploy/local-volume-provisioner on two nodes that each have a disk at
// the same path. Each disk becomes a PV pinned to its own node; a pod
// created without a node lands on its PV's node and writes to that node's
// disk; every discovery and cleanup pod runs on the node it is for; and a
// watcher's own token, as a compromised node would read it from its pods,
// cannot write another node's NodeDiskState. Last, deleting a Node object
// (with deleteUnboundPVsOfDeletedNodes) removes that node's unbound PV and
// leaves the other node's PV and its pod alone.
func TestMultiNodeLocalPV(t *testing.T) {
	c := framework.Connect(t)
	c.RequireNodes(t, 2)
	ctx := t.Context()
	nodes := c.Nodes[:2]
	disks := map[string]*lpvDisks{}
	vols := map[string]string{}
	for _, n := range nodes {
		disks[n.Name] = newLPVDisksOn(t, n)
		vols[n.Name] = disks[n.Name].addDir("vol0")
	}
	blk := disks[nodes[1].Name].addLoop("blk0")
	jobPods := watchProvisionerPods(ctx, t, c)
	deployLPVWith(ctx, t, c, disks[nodes[0].Name], map[string]string{"deleteUnboundPVsOfDeletedNodes": "true"})

	pvs := map[string]*corev1.PersistentVolume{}
	for _, n := range nodes {
		pv := waitForPVOn(ctx, t, c, n.Name, vols[n.Name], "", corev1.VolumeAvailable)
		if got := pvNodes(pv); len(got) != 1 || got[0] != n.Name {
			t.Fatalf("PV %s of %s's disk is pinned to %v, want [%s]", pv.Name, n.Name, got, n.Name)
		}
		pvs[n.Name] = pv
	}

	parent := t
	t.Run("a pod lands on its PV's node and writes that node's disk", func(t *testing.T) {
		for _, n := range nodes {
			name := fmt.Sprintf("e2e-mn-lpv-%d", n.Index)
			pod := claimPod(ctx, t, c, name, pvs[n.Name].Name, "echo from-"+n.Name+" > /data/f && sync && sleep 3600")
			// The pods outlive this step: the next ones use them.
			c.CreatePodOn(ctx, parent, pod, "")
			got := c.WaitForPod(ctx, t, name, 120*time.Second, corev1.PodRunning)
			if got.Spec.NodeName != n.Name {
				t.Fatalf("pod %s with %s's PV runs on %s", name, n.Name, got.Spec.NodeName)
			}
			src := disks[n.Name].host(filepath.Join(disks[n.Name].base, "src", "vol0", "f"))
			if b, err := os.ReadFile(src); err != nil || strings.TrimSpace(string(b)) != "from-"+n.Name {
				t.Fatalf("%s's disk holds %q (%v), want what the pod wrote", n.Name, b, err)
			}
		}
	})

	t.Run("a released PV is cleaned on its own node; the other node's stays in use", func(t *testing.T) {
		b := nodes[1]
		name := fmt.Sprintf("e2e-mn-lpv-%d", b.Index)
		c.DeletePod(t, name)
		deleteClaim(ctx, t, c, name)
		waitForPVOn(ctx, t, c, b.Name, vols[b.Name], pvs[b.Name].UID, corev1.VolumeAvailable)
		src := disks[b.Name].host(filepath.Join(disks[b.Name].base, "src", "vol0", "f"))
		if _, err := os.Stat(src); !os.IsNotExist(err) {
			t.Errorf("%s's disk still holds the old tenant's file after its cleanup: %v", b.Name, err)
		}
		a := nodes[0]
		c.RequireFile(ctx, t, fmt.Sprintf("e2e-mn-lpv-%d", a.Index), "/data/f", "from-"+a.Name)
	})

	t.Run("the master moved to another node while a cleanup runs publishes no dirty PV", func(t *testing.T) {
		masterMovedDuringCleanup(ctx, t, c, nodes[1], disks[nodes[1].Name], blk)
	})

	t.Run("every discovery and cleanup pod ran on the node it is for", func(t *testing.T) {
		seen, wrong := jobPods.result()
		for _, want := range []string{
			jobs.RoleDiscovery + "@" + nodes[0].Name, jobs.RoleDiscovery + "@" + nodes[1].Name,
			jobs.RoleCleanup + "@" + nodes[1].Name,
		} {
			if !seen[want] {
				t.Errorf("no %s pod was seen (seen: %v)", want, seen)
			}
		}
		for _, w := range wrong {
			t.Error(w)
		}
	})

	t.Run("a node's watcher token cannot write another node's NodeDiskState", func(t *testing.T) {
		a, b := nodes[0], nodes[1]
		token := watcherToken(ctx, t, c, b)
		if out, err := replaceNodeDiskState(ctx, t, c, token, a.Name); err == nil || !strings.Contains(err.Error(), "may only write the NodeDiskState named "+b.Name) {
			t.Errorf("node %s's watcher token updating %s's NodeDiskState: %v %s; want the policy's refusal", b.Name, a.Name, err, out)
		}
		if out, err := replaceNodeDiskState(ctx, t, c, token, b.Name); err != nil {
			t.Errorf("node %s's watcher token updating its own NodeDiskState: %v %s", b.Name, err, out)
		}
	})

	t.Run("deleting a node's Node object removes its unbound PV and leaves the other node's", func(t *testing.T) {
		a, b := nodes[0], nodes[1]
		gone := waitForPVOn(ctx, t, c, b.Name, vols[b.Name], "", corev1.VolumeAvailable)
		kept := findPVOn(ctx, t, c, a.Name, vols[a.Name])
		if kept == nil {
			t.Fatalf("no PV for %s's disk", a.Name)
		}
		if err := c.Client.CoreV1().Nodes().Delete(ctx, b.Name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		// The kubelet registers its Node only when it starts.
		t.Cleanup(func() { restartComponentOn(context.Background(), t, c, b, "kubelet", nil) })
		if err := c.WaitForPVGone(t.Context(), gone.Name, 120*time.Second); err != nil {
			t.Fatalf("PV %s of deleted node %s still exists: %v", gone.Name, b.Name, err)
		}
		if pv := findPVOn(ctx, t, c, a.Name, vols[a.Name]); pv == nil || pv.UID != kept.UID {
			t.Fatalf("PV %s of %s is gone or replaced after %s was deleted", kept.Name, a.Name, b.Name)
		}
		c.RequireFile(ctx, t, fmt.Sprintf("e2e-mn-lpv-%d", a.Index), "/data/f", "from-"+a.Name)
	})
}

// pvNodes returns the host names a PV's node affinity allows.
func pvNodes(pv *corev1.PersistentVolume) []string {
	var names []string
	if pv.Spec.NodeAffinity == nil || pv.Spec.NodeAffinity.Required == nil {
		return nil
	}
	for _, term := range pv.Spec.NodeAffinity.Required.NodeSelectorTerms {
		for _, e := range term.MatchExpressions {
			if e.Key == corev1.LabelHostname && e.Operator == corev1.NodeSelectorOpIn {
				names = append(names, e.Values...)
			}
		}
	}
	return names
}

// waitForPVOn waits for a PV of node's disk at hostPath, other than notUID,
// in phase.
func waitForPVOn(ctx context.Context, t testing.TB, c *framework.Cluster, node, hostPath string, notUID types.UID, phase corev1.PersistentVolumePhase) *corev1.PersistentVolume {
	t.Helper()
	var pv *corev1.PersistentVolume
	err := framework.Poll(t.Context(), 120*time.Second, func(context.Context) bool {
		pv = findPVOn(ctx, t, c, node, hostPath)
		return pv != nil && pv.UID != notUID && pv.Status.Phase == phase
	})
	if err != nil {
		out, _ := c.Kubectl(ctx, "get", "pv,jobs,pods", "-A", "-o", "wide")
		t.Fatalf("no %s PV for %s on %s: %v\n%s", phase, hostPath, node, err, out)
	}
	return pv
}

// findPVOn returns the provisioner's PV for node's disk at hostPath.
func findPVOn(ctx context.Context, t testing.TB, c *framework.Cluster, node, hostPath string) *corev1.PersistentVolume {
	list, err := c.Client.CoreV1().PersistentVolumes().List(ctx, metav1.ListOptions{LabelSelector: lpvManagedBy})
	if err != nil {
		t.Logf("list PVs: %v", err)
		return nil
	}
	for i, pv := range list.Items {
		if pv.Spec.Local != nil && pv.Spec.Local.Path == hostPath && pv.Annotations[jobs.AnnNode] == node && pv.DeletionTimestamp == nil {
			return &list.Items[i]
		}
	}
	return nil
}

// provisionerPods records, from a watch, each provisioner pod's role and
// node ("discovery@node-1"), and every pod bound to a node other than the
// one it is for.
type provisionerPods struct {
	mu    sync.Mutex
	seen  map[string]bool
	wrong []string
}

func watchProvisionerPods(ctx context.Context, t testing.TB, c *framework.Cluster) *provisionerPods {
	t.Helper()
	w, err := c.Client.CoreV1().Pods(lpvNamespace).Watch(ctx, metav1.ListOptions{LabelSelector: jobs.LabelRole})
	if err != nil {
		t.Fatal(err)
	}
	p := &provisionerPods{seen: map[string]bool{}}
	go func() {
		defer w.Stop()
		for ev := range w.ResultChan() {
			pod, ok := ev.Object.(*corev1.Pod)
			if !ok || ev.Type == watch.Deleted || pod.Spec.NodeName == "" {
				continue
			}
			p.mu.Lock()
			p.seen[pod.Labels[jobs.LabelRole]+"@"+pod.Spec.NodeName] = true
			if want := pod.Annotations[jobs.AnnNode]; want != pod.Spec.NodeName {
				p.wrong = append(p.wrong, fmt.Sprintf("%s pod %s for node %q runs on %s", pod.Labels[jobs.LabelRole], pod.Name, want, pod.Spec.NodeName))
			}
			p.mu.Unlock()
		}
	}()
	return p
}

func (p *provisionerPods) result() (map[string]bool, []string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	seen := make(map[string]bool, len(p.seen))
	for k, v := range p.seen {
		seen[k] = v
	}
	return seen, append([]string(nil), p.wrong...)
}

// watcherToken reads the ServiceAccount token of the watcher pod on node n
// from the node itself, as an attacker who owns the node would.
func watcherToken(ctx context.Context, t testing.TB, c *framework.Cluster, n *framework.Node) string {
	t.Helper()
	pods, err := c.Client.CoreV1().Pods(lpvNamespace).List(ctx, metav1.ListOptions{
		LabelSelector: "app.kubernetes.io/component=watcher", FieldSelector: "spec.nodeName=" + n.Name})
	if err != nil || len(pods.Items) != 1 {
		t.Fatalf("the watcher pod on %s: %d pods, %v", n.Name, len(pods.Items), err)
	}
	glob := filepath.Join(n.RootDir(), "pods", string(pods.Items[0].UID), "volumes", "kubernetes.io~projected", "*", "token")
	out := n.Run(ctx, t, "sh", "-c", "cat "+glob)
	return strings.TrimSpace(out)
}

// replaceNodeDiskState updates (PUT) the NodeDiskState name with token,
// adding a label, and returns kubectl's output.
func replaceNodeDiskState(ctx context.Context, t testing.TB, c *framework.Cluster, token, name string) (string, error) {
	t.Helper()
	as := []string{"--kubeconfig", os.DevNull, "--token", token, "--server", c.Config.Host,
		"--certificate-authority", c.CAFile(t)}
	raw, err := c.Kubectl(ctx, append(as, "get", "nodediskstates.localpv.nodeplug.io", name, "-o", "json")...)
	if err != nil {
		return raw, err
	}
	var obj map[string]any
	if err := json.Unmarshal([]byte(raw), &obj); err != nil {
		t.Fatal(err)
	}
	meta, _ := obj["metadata"].(map[string]any)
	labels, _ := meta["labels"].(map[string]any)
	if labels == nil {
		labels = map[string]any{}
	}
	labels["e2e.nodeplug.io/touched"] = "true"
	meta["labels"] = labels
	file := filepath.Join(t.TempDir(), name+".json")
	data, _ := json.Marshal(obj)
	if err := os.WriteFile(file, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return c.Kubectl(ctx, append(as, "replace", "-f", file)...)
}
