//go:build e2e

package framework

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeplug/nodeplug/pkg/util/testutil"
)

// apiNodes returns the nodes of an existing cluster that take test pods
// (ListNodeAddresses), each reached over SSH at its InternalIP.
func apiNodes(c *Cluster) ([]*Node, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	addrs, err := ListNodeAddresses(ctx, c.Client)
	if err != nil {
		return nil, err
	}
	nodes := make([]*Node, 0, len(addrs))
	for i, a := range addrs {
		target := c.ssh
		target.Host = a.IP
		nodes = append(nodes, &Node{Name: a.Name, Index: i + 1, ssh: &target, c: c})
	}
	return nodes, nil
}

// remoteOutput runs name on the node over SSH and returns its standard
// output; the error carries its standard error.
func (n *Node) remoteOutput(ctx context.Context, stdin []byte, name string, args ...string) ([]byte, error) {
	cmd := n.Command(ctx, name, args...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	if err := cmd.Run(); err != nil {
		return out.Bytes(), fmt.Errorf("on node %s: %s %s: %w: %s", n.Name, name, strings.Join(args, " "), err, strings.TrimSpace(errOut.String()))
	}
	return out.Bytes(), nil
}

// remoteMountInfo copies the node's mount table (of its root's mount
// namespace) into a temporary file, which the caller removes.
func (n *Node) remoteMountInfo() (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	raw, err := n.remoteOutput(ctx, nil, "cat", "/proc/1/mountinfo")
	if err != nil {
		return "", fmt.Errorf("mount table of node %s: %w", n.Name, err)
	}
	f, err := os.CreateTemp("", "mountinfo-"+n.Name+"-")
	if err != nil {
		return "", err
	}
	_, err = f.Write(raw)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = os.Remove(f.Name())
		return "", err
	}
	return f.Name(), nil
}

// ReadFile returns the content of the file the node sees at path.
func (n *Node) ReadFile(ctx context.Context, path string) ([]byte, error) {
	if !n.Remote() {
		return os.ReadFile(n.hostPath(path))
	}
	return n.remoteOutput(ctx, nil, "cat", "--", path)
}

// WriteFile writes data to the file the node sees at path, with perm.
func (n *Node) WriteFile(ctx context.Context, path string, data []byte, perm fs.FileMode) error {
	if !n.Remote() {
		return os.WriteFile(n.hostPath(path), data, perm)
	}
	script := fmt.Sprintf(`cat >"$1" && chmod %o "$1"`, perm.Perm())
	_, err := n.remoteOutput(ctx, data, "sh", "-c", script, "sh", path)
	return err
}

// MkdirAll makes the directory the node sees at path, and its parents.
func (n *Node) MkdirAll(ctx context.Context, path string) error {
	if !n.Remote() {
		return os.MkdirAll(n.hostPath(path), 0o755)
	}
	_, err := n.remoteOutput(ctx, nil, "mkdir", "-p", "--", path)
	return err
}

// RemoveAll removes what the node sees at path, if anything.
func (n *Node) RemoveAll(ctx context.Context, path string) error {
	if !n.Remote() {
		return os.RemoveAll(n.hostPath(path))
	}
	_, err := n.remoteOutput(ctx, nil, "rm", "-rf", "--", path)
	return err
}

// remoteArgs returns the command line of a component of an existing
// cluster: the first node's kubelet's (or kube-proxy's, containerd's)
// from its /proc over SSH; a control plane component's from its static
// pod in kube-system (label component=<name>, as kubeadm sets), else from
// its process on the machine of the kubeconfig's server, over SSH. When
// neither answers it ends t (testutil.MissingCapability).
func (c *Cluster) remoteArgs(t testing.TB, component string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if nodeComponents[component] {
		args, err := processArgs(ctx, c.Node, component)
		if err != nil {
			t.Fatalf("%s on node %s: %v", component, c.Node.Name, err)
		}
		return args
	}
	pods, err := c.Client.CoreV1().Pods("kube-system").List(ctx, metav1.ListOptions{LabelSelector: "component=" + component})
	if err == nil && len(pods.Items) > 0 && len(pods.Items[0].Spec.Containers) > 0 {
		ctr := pods.Items[0].Spec.Containers[0]
		return append(append([]string{}, ctr.Command...), ctr.Args...)
	}
	cp, cpErr := c.controlPlaneNode()
	if cpErr == nil {
		var args []string
		if args, cpErr = processArgs(ctx, cp, component); cpErr == nil {
			return args
		}
	}
	testutil.MissingCapability(t, "cannot read the flags of %s: no pod labelled component=%s in kube-system (%v), and over SSH to the API server's machine: %v",
		component, component, err, cpErr)
	return nil
}

// controlPlaneNode is the machine of the kubeconfig's server, reached over
// SSH as the nodes are (upstream's e2e framework does the same).
func (c *Cluster) controlPlaneNode() (*Node, error) {
	u, err := url.Parse(c.Config.Host)
	if err != nil {
		return nil, fmt.Errorf("the kubeconfig's server %q: %w", c.Config.Host, err)
	}
	if u.Hostname() == "" {
		return nil, fmt.Errorf("the kubeconfig's server %q names no host", c.Config.Host)
	}
	target := c.ssh
	target.Host = u.Hostname()
	return &Node{Name: "control-plane " + u.Hostname(), ssh: &target, c: c}, nil
}

// processArgs reads the command line of the oldest process named name on
// node n, from its /proc.
func processArgs(ctx context.Context, n *Node, name string) ([]string, error) {
	raw, err := n.remoteOutput(ctx, nil, "sh", "-c", `pid=$(pgrep -xo "$1") && cat "/proc/$pid/cmdline"`, "sh", commName(name))
	if err != nil {
		return nil, fmt.Errorf("no process %s: %w", name, err)
	}
	return strings.Split(strings.TrimRight(string(raw), "\x00"), "\x00"), nil
}

// CAFile is a file with the CA the kubeconfig trusts for the API server,
// for a kubectl run with other credentials: the kubeconfig's own file, or
// its inline data written to a file of t's.
func (c *Cluster) CAFile(t testing.TB) string {
	t.Helper()
	if c.Config.CAFile != "" {
		return c.Config.CAFile
	}
	if len(c.Config.CAData) == 0 {
		t.Fatal("the kubeconfig names no CA for the API server")
	}
	f := filepath.Join(t.TempDir(), "ca.crt")
	if err := os.WriteFile(f, c.Config.CAData, 0o644); err != nil {
		t.Fatal(err)
	}
	return f
}
