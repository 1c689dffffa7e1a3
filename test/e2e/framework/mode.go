package framework

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// ClusterMode says which cluster the e2e tier runs against: the local
// cluster hack/e2e.sh brings up, or an existing one it is pointed at.
type ClusterMode string

const (
	// ModeLocal is the cluster of hack/local-up-cluster.sh, whose nodes
	// the tests reach from its host (nsenter, LOCAL_UP_DIR).
	ModeLocal ClusterMode = "local"
	// ModeExisting is any cluster named by KUBECONFIG, whose nodes the
	// tests reach over SSH (KUBE_SSH_KEY_PATH, KUBE_SSH_USER).
	ModeExisting ClusterMode = "existing"
)

// ClusterModeEnv is the variable hack/e2e.sh passes the mode in.
const ClusterModeEnv = "E2E_CLUSTER"

// LocalHostSkipPrefix starts the skip message of every test that needs the
// local cluster's host (RequireLocalHost); hack/e2e.sh counts the tests
// skipped with it.
const LocalHostSkipPrefix = "needs the local cluster's host: "

// ParseClusterMode returns the mode E2E_CLUSTER names; empty is local.
func ParseClusterMode(s string) (ClusterMode, error) {
	switch m := ClusterMode(strings.TrimSpace(s)); m {
	case "", ModeLocal:
		return ModeLocal, nil
	case ModeExisting:
		return ModeExisting, nil
	default:
		return "", fmt.Errorf("%s=%q: want %q or %q", ClusterModeEnv, s, ModeLocal, ModeExisting)
	}
}

// clusterModeFromEnv is ParseClusterMode of the environment, for helpers
// that have no Cluster; an invalid value counts as existing, so that a
// test never uses the host by mistake (Connect rejects it).
func clusterModeFromEnv() ClusterMode {
	m, err := ParseClusterMode(os.Getenv(ClusterModeEnv))
	if err != nil {
		return ModeExisting
	}
	return m
}

// SSHTarget is how a test reaches a node's machine over SSH: the OpenSSH
// client with the key, the user, and a known_hosts file of its own, which
// learns each node's host key at the first connection.
type SSHTarget struct {
	Host       string // the node's InternalIP
	Port       int    // 0 is 22
	User       string // KUBE_SSH_USER; not root: commands run through sudo -n
	KeyPath    string // KUBE_SSH_KEY_PATH
	KnownHosts string // a file in a temporary directory
}

// Argv returns the ssh command line that runs the command name args on the
// node: one remote command line, each argument quoted for the remote
// shell, through sudo -n when the user is not root.
func (s SSHTarget) Argv(name string, args ...string) []string {
	port := s.Port
	if port == 0 {
		port = 22
	}
	return []string{"ssh",
		"-i", s.KeyPath,
		"-o", "BatchMode=yes",
		"-o", "StrictHostKeyChecking=accept-new",
		"-o", "UserKnownHostsFile=" + s.KnownHosts,
		"-o", "ConnectTimeout=10",
		"-o", "LogLevel=ERROR",
		"-p", strconv.Itoa(port),
		"-l", s.User,
		"--", s.Host,
		RemoteCommandLine(s.User, name, args...),
	}
}

// RemoteCommandLine returns the shell command line that runs name with
// args as root for user: as is for root, else through sudo -n (which fails
// instead of asking for a password).
func RemoteCommandLine(user, name string, args ...string) string {
	words := make([]string, 0, len(args)+3)
	if user != "root" {
		words = append(words, "sudo", "-n", "--")
	}
	for _, w := range append([]string{name}, args...) {
		words = append(words, ShellQuote(w))
	}
	return strings.Join(words, " ")
}

// ShellQuote quotes s for a POSIX shell: as is when it has only characters
// no shell treats specially, else in single quotes.
func ShellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789@%+=:,./_-") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// NodeAddress is a node of an existing cluster as the API reports it.
type NodeAddress struct {
	Name string
	IP   string // its first InternalIP
}

// NodeAddresses returns the nodes test pods can run on (neither
// unschedulable nor tainted NoSchedule or NoExecute, as a control plane
// node is) ordered by name, with their InternalIP; a node without one is an
// error.
func NodeAddresses(nodes []corev1.Node) ([]NodeAddress, error) {
	var out []NodeAddress
	for i := range nodes {
		n := &nodes[i]
		if !schedulable(n) {
			continue
		}
		ip := ""
		for _, a := range n.Status.Addresses {
			if a.Type == corev1.NodeInternalIP {
				ip = a.Address
				break
			}
		}
		if ip == "" {
			return nil, fmt.Errorf("node %s has no InternalIP to reach it over SSH", n.Name)
		}
		out = append(out, NodeAddress{Name: n.Name, IP: ip})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("none of the cluster's %d node(s) takes test pods (all unschedulable or tainted)", len(nodes))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

func schedulable(n *corev1.Node) bool {
	if n.Spec.Unschedulable {
		return false
	}
	for _, taint := range n.Spec.Taints {
		if taint.Effect == corev1.TaintEffectNoSchedule || taint.Effect == corev1.TaintEffectNoExecute {
			return false
		}
	}
	return true
}

// ListNodeAddresses is NodeAddresses of the cluster's Node objects.
func ListNodeAddresses(ctx context.Context, client kubernetes.Interface) ([]NodeAddress, error) {
	list, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("list nodes: %w", err)
	}
	return NodeAddresses(list.Items)
}

// commName is the name pgrep -x matches a process by: the kernel keeps
// the first 15 bytes of an executable's name ("kube-controller" for the
// kube-controller-manager).
func commName(name string) string {
	if len(name) > 15 {
		return name[:15]
	}
	return name
}
