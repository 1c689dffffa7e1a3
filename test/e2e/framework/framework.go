//go:build e2e

package framework

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/nodeplug/nodeplug/pkg/util/testutil"
)

// Cluster describes the cluster under test: the local cluster, or an
// existing one (Mode).
type Cluster struct {
	Client kubernetes.Interface
	Config *rest.Config
	Mode   ClusterMode
	BinDir string // BIN_DIR
	dir    string // LOCAL_UP_DIR; "" on an existing cluster
	// ssh is how the nodes of an existing cluster are reached (all but
	// its Host).
	ssh SSHTarget
	// Nodes are the cluster's nodes (one, the host, with NODES=1). Node is
	// the first; a test that needs one node uses it, and NodeName is its
	// name.
	Nodes    []*Node
	Node     *Node
	NodeName string
}

// Connect returns the cluster named by the environment, or fails t: the
// local cluster (E2E_CLUSTER unset or local), or an existing one
// (E2E_CLUSTER=existing), whose nodes are the API's and are reached over
// SSH.
func Connect(t testing.TB) *Cluster {
	t.Helper()
	mode, err := ParseClusterMode(os.Getenv(ClusterModeEnv))
	if err != nil {
		t.Fatal(err)
	}
	c := &Cluster{Mode: mode, BinDir: os.Getenv("BIN_DIR")}
	kubeconfig := os.Getenv("KUBECONFIG")
	if mode == ModeExisting {
		c.ssh = SSHTarget{User: os.Getenv("KUBE_SSH_USER"), KeyPath: os.Getenv("KUBE_SSH_KEY_PATH")}
		if c.BinDir == "" || kubeconfig == "" || c.ssh.User == "" || c.ssh.KeyPath == "" {
			t.Fatal("e2e tests on an existing cluster need KUBECONFIG, KUBE_SSH_KEY_PATH, KUBE_SSH_USER and BIN_DIR; run them with E2E_CLUSTER=existing hack/e2e.sh")
		}
		c.ssh.KnownHosts = filepath.Join(t.TempDir(), "known_hosts")
	} else {
		c.dir, c.NodeName = os.Getenv("LOCAL_UP_DIR"), os.Getenv("NODE_NAME")
		if c.dir == "" || c.BinDir == "" || kubeconfig == "" || c.NodeName == "" {
			t.Fatal("e2e tests need KUBECONFIG, LOCAL_UP_DIR, BIN_DIR and NODE_NAME; run them with hack/e2e.sh")
		}
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatalf("kubeconfig: %v", err)
	}
	c.Config = cfg
	if c.Client, err = kubernetes.NewForConfig(cfg); err != nil {
		t.Fatalf("client: %v", err)
	}
	if mode == ModeExisting {
		c.Nodes, err = apiNodes(c)
	} else {
		c.Nodes, err = discoverNodes(c)
	}
	if err != nil {
		t.Fatalf("nodes: %v", err)
	}
	c.Node, c.NodeName = c.Nodes[0], c.Nodes[0].Name
	return c
}

// Dir is the local cluster's directory (LOCAL_UP_DIR); on an existing
// cluster it skips t (RequireLocalHost).
func (c *Cluster) Dir(t testing.TB) string {
	t.Helper()
	c.RequireLocalHost(t, "files in LOCAL_UP_DIR")
	return c.dir
}

// RequireLocalHost skips t on an existing cluster, saying why with
// LocalHostSkipPrefix: the test needs what only the local cluster's host
// has (its directory, its processes, the nodes' namespaces). hack/e2e.sh
// counts these skips; CI=true does not turn them into failures.
func (c *Cluster) RequireLocalHost(t testing.TB, why string) {
	t.Helper()
	if c.Mode == ModeExisting {
		t.Skip(LocalHostSkipPrefix + why)
	}
}

// ControllerFlexDir is the kube-controller-manager's flex plugin dir on
// the host, where it finds attachable drivers for attach and detach.
func (c *Cluster) ControllerFlexDir(t testing.TB) string {
	t.Helper()
	return filepath.Join(c.Dir(t), "flexvolume")
}

// nodeComponents run on every node; their pid files and logs carry the
// node's name when the node is not the host.
var nodeComponents = map[string]bool{"kubelet": true, "kube-proxy": true, "containerd": true}

// PIDFile is the pid file of a component local-up started: a node
// component (kubelet, kube-proxy, containerd) of the first node, or a
// control plane one.
func (c *Cluster) PIDFile(t testing.TB, component string) string {
	t.Helper()
	if nodeComponents[component] {
		return c.Node.PIDFile(t, component)
	}
	return filepath.Join(c.Dir(t), "pids", component)
}

// Kubectl runs the cluster's kubectl and returns its standard output.
func (c *Cluster) Kubectl(ctx context.Context, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, filepath.Join(c.BinDir, "kubectl"), args...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("kubectl %s: %w: %s", strings.Join(args, " "), err, errOut.String())
	}
	return out.String(), nil
}

// ComponentBinary returns the executable of a process local-up started.
func (c *Cluster) ComponentBinary(t testing.TB, name string) (string, error) {
	t.Helper()
	pid, err := os.ReadFile(c.PIDFile(t, name))
	if err != nil {
		return "", err
	}
	return os.Readlink(filepath.Join("/proc", strings.TrimSpace(string(pid)), "exe"))
}

// RequireFlag fails t unless the process local-up started as component
// runs with flag (a prefix of one of its arguments, e.g.
// "--experimental-flexvolume-discovery").
//
// On an existing cluster it reads the arguments over SSH (remoteArgs).
func (c *Cluster) RequireFlag(t testing.TB, component, flag string) {
	t.Helper()
	var args []string
	if c.Mode == ModeExisting {
		args = c.remoteArgs(t, component)
	} else {
		pid, err := os.ReadFile(c.PIDFile(t, component))
		if err != nil {
			t.Fatalf("%s: %v", component, err)
		}
		raw, err := os.ReadFile(filepath.Join("/proc", strings.TrimSpace(string(pid)), "cmdline"))
		if err != nil {
			t.Fatalf("%s: %v", component, err)
		}
		args = strings.Split(string(raw), "\x00")
	}
	for _, arg := range args {
		if strings.HasPrefix(arg, flag) {
			return
		}
	}
	if c.Mode == ModeExisting {
		t.Fatalf("the cluster's %s runs without %s; give it the flags docs/e2e.md lists", component, flag)
	}
	t.Fatalf("%s runs without %s; run the e2e suite with hack/e2e.sh, which sets it", component, flag)
}

// RequireNodes ends t, saying why, on a cluster of fewer than n nodes
// (make test-e2e runs NODES=3): it skips, or fails under CI=true
// (testutil.MissingCapability), so that a wrong NODES cannot make a tier
// pass without running its multi-node tests.
func (c *Cluster) RequireNodes(t testing.TB, n int) {
	t.Helper()
	if len(c.Nodes) < n {
		testutil.MissingCapability(t, "the cluster has %d node(s); this test needs %d (make local-up NODES=3, as make test-e2e runs)", len(c.Nodes), n)
	}
}

// CreatePod creates pod in the default namespace, pinned to the first
// node, and deletes it when t ends.
func (c *Cluster) CreatePod(ctx context.Context, t testing.TB, pod *corev1.Pod) *corev1.Pod {
	t.Helper()
	return c.CreatePodOn(ctx, t, pod, c.NodeName)
}

// CreatePodOn creates pod in the default namespace, pinned to node (""
// leaves the choice to the scheduler), and deletes it when t ends.
func (c *Cluster) CreatePodOn(ctx context.Context, t testing.TB, pod *corev1.Pod, node string) *corev1.Pod {
	t.Helper()
	pod.Namespace = "default"
	pod.Spec.NodeName = node
	if pod.Spec.TerminationGracePeriodSeconds == nil {
		zero := int64(0)
		pod.Spec.TerminationGracePeriodSeconds = &zero
	}
	created, err := c.Client.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create pod %s: %v", pod.Name, err)
	}
	t.Cleanup(func() { c.DeletePod(t, pod.Name) })
	return created
}

// DeletePod deletes a pod of the default namespace and waits until it is
// gone (DeletePodIn).
func (c *Cluster) DeletePod(t testing.TB, name string) { c.DeletePodIn(t, "default", name) }

// DeletePodIn deletes a pod of namespace and waits up to 90 s until it is
// gone; a pod that does not exist is no error.
func (c *Cluster) DeletePodIn(t testing.TB, namespace, name string) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	err := c.Client.CoreV1().Pods(namespace).Delete(ctx, name, metav1.DeleteOptions{})
	if apierrors.IsNotFound(err) {
		return
	}
	if err != nil {
		t.Errorf("delete pod %s/%s: %v", namespace, name, err)
		return
	}
	err = Poll(ctx, 0, func(ctx context.Context) bool {
		_, err := c.Client.CoreV1().Pods(namespace).Get(ctx, name, metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})
	if err != nil {
		t.Errorf("pod %s/%s still exists after 90 s", namespace, name)
	}
}

// WaitForPod waits up to timeout for the pod to reach one of phases, and
// fails t with the pod's status and events otherwise.
func (c *Cluster) WaitForPod(ctx context.Context, t testing.TB, name string, timeout time.Duration, phases ...corev1.PodPhase) *corev1.Pod {
	t.Helper()
	var pod *corev1.Pod
	err := Poll(ctx, timeout, func(ctx context.Context) bool {
		var err error
		if pod, err = c.Client.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{}); err != nil {
			return false
		}
		return slices.Contains(phases, pod.Status.Phase)
	})
	if err != nil {
		events, _ := c.Kubectl(ctx, "get", "events", "-n", "default", "--field-selector", "involvedObject.name="+name)
		phase := corev1.PodPhase("unknown")
		if pod != nil {
			phase = pod.Status.Phase
		}
		t.Fatalf("pod %s: phase %s, want %v within %s\nevents:\n%s", name, phase, phases, timeout, events)
	}
	return pod
}

// RequireEvent waits as WaitForEvent does, with the cluster's client, and
// fails t when no Event matches q within timeout.
func (c *Cluster) RequireEvent(ctx context.Context, t testing.TB, q EventQuery, timeout time.Duration) *corev1.Event {
	t.Helper()
	ev, err := WaitForEvent(ctx, c.Client, q, timeout)
	if err != nil {
		t.Fatal(err)
	}
	return ev
}

// BusyboxPod returns a one-container busybox pod running script.
func BusyboxPod(name, script string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{
				Name: "c", Image: BusyboxImage, ImagePullPolicy: ImagePullPolicy(),
				Command: []string{"/bin/sh", "-c", script},
			}},
		},
	}
}

// KubeletMetrics returns node's kubelet's /metrics, read through the
// apiserver's node proxy (Prometheus' text format; MetricSum reads it).
func (c *Cluster) KubeletMetrics(ctx context.Context, node string) (string, error) {
	raw, err := c.Client.CoreV1().RESTClient().Get().AbsPath("/api/v1/nodes", node, "proxy", "metrics").DoRaw(ctx)
	if err != nil {
		return "", fmt.Errorf("metrics of the kubelet on %s: %w", node, err)
	}
	return string(raw), nil
}
