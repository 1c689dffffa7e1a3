//go:build e2e

package framework

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/mount-utils"
)

// Upstream's default paths, which each node of a multi-node cluster mounts
// from its own directory (hack/lib/nodes.sh NODE_MOUNTS).
const (
	KubeletRootDir = "/var/lib/kubelet"
	FlexDir        = "/usr/libexec/kubernetes/kubelet-plugins/volume/exec"
	DisksDir       = "/mnt/disks"
)

// nodeMounts maps a path inside a namespaced node to the directory of the
// node's own dir that is mounted there.
var nodeMounts = []struct{ inNode, sub string }{
	{KubeletRootDir, "kubelet"},
	{FlexDir, "flexvolume"},
	{"/mnt", "mnt"},
	{"/tmp", "tmp"},
	{"/run", "run"},
}

// Node is one node of the cluster, as a test on the host reaches it. On
// the local cluster with one node (NODES=1) the node is the host itself;
// with more, each is a set of Linux namespaces with its own init
// (docs/local-cluster.md). On an existing cluster it is a machine reached
// over SSH at its InternalIP (ssh).
type Node struct {
	Name  string
	Index int    // 1..N for a namespaced node, 0 for the host
	dir   string // LOCAL_UP_DIR/nodes/<name>; "" on the host
	ssh   *SSHTarget
	c     *Cluster
}

// discoverNodes returns the nodes local-up started: the namespaced ones in
// index order, or the host.
func discoverNodes(c *Cluster) ([]*Node, error) {
	names, _ := filepath.Glob(filepath.Join(c.dir, "nodes", "*", "name"))
	var nodes []*Node
	for _, f := range names {
		dir := filepath.Dir(f)
		name, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		idx, err := os.ReadFile(filepath.Join(dir, "index"))
		if err != nil {
			return nil, err
		}
		n := &Node{Name: strings.TrimSpace(string(name)), dir: dir, c: c}
		if _, err := fmt.Sscan(string(idx), &n.Index); err != nil {
			return nil, fmt.Errorf("%s: %w", dir, err)
		}
		nodes = append(nodes, n)
	}
	sort.Slice(nodes, func(i, j int) bool { return nodes[i].Index < nodes[j].Index })
	if len(nodes) == 0 {
		nodes = []*Node{{Name: c.NodeName, c: c}}
	}
	return nodes, nil
}

// OnHost reports whether the node is the host itself (NODES=1).
func (n *Node) OnHost() bool { return n.dir == "" && n.ssh == nil }

// Remote reports whether the node is a machine of an existing cluster,
// reached over SSH.
func (n *Node) Remote() bool { return n.ssh != nil }

// requireLocalHost skips t, as Cluster.RequireLocalHost does, on a node of
// an existing cluster.
func (n *Node) requireLocalHost(t testing.TB, why string) {
	t.Helper()
	if n.Remote() {
		t.Skip(LocalHostSkipPrefix + why)
	}
}

// Component is the name local-up gives the node's process (its pid file
// and log): "kubelet" on the host, "kubelet-<node>" in a node.
func (n *Node) Component(name string) string {
	if n.OnHost() {
		return name
	}
	return name + "-" + n.Name
}

// PIDFile is the pid file of the node's component (see Component).
func (n *Node) PIDFile(t testing.TB, component string) string {
	t.Helper()
	n.requireLocalHost(t, "local-up's pid file of "+component)
	return filepath.Join(n.c.dir, "pids", n.Component(component))
}

// RootDir is the kubelet's root dir as the kubelet sees it.
func (n *Node) RootDir() string {
	if n.OnHost() {
		return filepath.Join(n.c.dir, "kubelet")
	}
	return KubeletRootDir
}

// FlexDir is the kubelet's flex plugin dir as the kubelet sees it.
func (n *Node) FlexDir() string {
	if n.OnHost() {
		return filepath.Join(n.c.dir, "flexvolume")
	}
	return FlexDir
}

// SharedDir is a directory on the node below a shared mount, for
// Bidirectional and HostToContainer hostPaths and test disks, as the node
// sees it.
func (n *Node) SharedDir() string {
	if n.OnHost() {
		return filepath.Join(n.c.dir, "shared")
	}
	return filepath.Join(DisksDir, "e2e")
}

// ContainerdSocket is the node's containerd socket (a host path, which the
// node sees at the same path).
func (n *Node) ContainerdSocket(t testing.TB) string {
	t.Helper()
	n.requireLocalHost(t, "the node's containerd socket on the host")
	if n.OnHost() {
		return filepath.Join(n.c.dir, "run", "containerd.sock")
	}
	return filepath.Join(n.dir, "containerd.sock")
}

// Log is the path of the node's component log on the host.
func (n *Node) Log(t testing.TB, component string) string {
	t.Helper()
	n.requireLocalHost(t, "local-up's log of "+component)
	return filepath.Join(n.c.dir, "logs", n.Component(component)+".log")
}

// HostPath returns where the host finds the file the node sees at path:
// the node's own directory for a path below one of upstream's default
// paths it mounts, else path itself (the node sees the host's tree). Files
// written there appear in the node; mounts made in the node do not (use
// MountType). On an existing cluster it skips t (ReadFile, WriteFile
// and MkdirAll work there).
func (n *Node) HostPath(t testing.TB, path string) string {
	t.Helper()
	n.requireLocalHost(t, "the node's files through the host ("+path+")")
	return n.hostPath(path)
}

func (n *Node) hostPath(path string) string {
	if n.OnHost() {
		return path
	}
	for _, m := range nodeMounts {
		if path == m.inNode || strings.HasPrefix(path, m.inNode+"/") {
			return filepath.Join(n.dir, m.sub, strings.TrimPrefix(path, m.inNode))
		}
	}
	return path
}

// InitPID is the host PID of the node's init (0 on the host).
func (n *Node) InitPID() (int, error) {
	if n.OnHost() {
		return 0, nil
	}
	raw, err := os.ReadFile(filepath.Join(n.c.dir, "pids", "node-"+n.Name))
	if err != nil {
		return 0, fmt.Errorf("node %s: %w", n.Name, err)
	}
	var pid int
	if _, err := fmt.Sscan(string(raw), &pid); err != nil {
		return 0, fmt.Errorf("node %s pid file: %w", n.Name, err)
	}
	return pid, nil
}

// Command returns a command that runs name in all of the node's
// namespaces, as an operator's nsenter would (nsenter forks name as its
// child in the node's PID namespace and exits with its status; DaemonPID
// finds the child), or on the host for the host node. The executable must
// be at a path the node sees. On an existing cluster it runs name over
// SSH (as root, through sudo -n for another user), with the command's
// standard streams and exit status.
func (n *Node) Command(ctx context.Context, name string, args ...string) *exec.Cmd {
	argv := n.argv(name, args)
	return exec.CommandContext(ctx, argv[0], argv[1:]...)
}

// DaemonCommand is Command for a process that outlives the test's context
// (a component restarted by the test).
func (n *Node) DaemonCommand(t testing.TB, name string, args ...string) *exec.Cmd {
	t.Helper()
	n.requireLocalHost(t, "a daemon started in the node's namespaces")
	argv := n.argv(name, args)
	return exec.Command(argv[0], argv[1:]...)
}

func (n *Node) argv(name string, args []string) []string {
	if n.Remote() {
		return n.ssh.Argv(name, args...)
	}
	if n.OnHost() {
		return append([]string{name}, args...)
	}
	pid, err := n.InitPID()
	if err != nil {
		// nsenter fails, naming the error.
		return []string{"nsenter", "--target", "0", "--", "false", err.Error()}
	}
	return append([]string{"nsenter", "--target", fmt.Sprint(pid),
		"--mount", "--net", "--uts", "--pid", "--", name}, args...)
}

// Run runs name in the node and returns its combined output, failing t on
// an error.
func (n *Node) Run(ctx context.Context, t testing.TB, name string, args ...string) string {
	t.Helper()
	out, err := n.Command(ctx, name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("on node %s: %s %s: %v\n%s", n.Name, name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// mountInfo returns the node's mount table: mount point to file system
// type, in mount order, read from its init's mountinfo (paths as the node
// sees them).
func (n *Node) mountInfo() ([][2]string, error) {
	file := "/proc/self/mountinfo"
	if n.Remote() {
		var err error
		if file, err = n.remoteMountInfo(); err != nil {
			return nil, err
		}
		defer os.Remove(file)
	} else if !n.OnHost() {
		pid, err := n.InitPID()
		if err != nil {
			return nil, err
		}
		file = fmt.Sprintf("/proc/%d/mountinfo", pid)
	}
	infos, err := mount.ParseMountInfo(file)
	if err != nil {
		return nil, fmt.Errorf("mount table of node %s: %w", n.Name, err)
	}
	mounts := make([][2]string, 0, len(infos))
	for _, m := range infos {
		mounts = append(mounts, [2]string{unescapeMountPath(m.MountPoint), m.FsType})
	}
	return mounts, nil
}

// unescapeMountPath undoes mountinfo's octal escapes (\040 for a space).
func unescapeMountPath(p string) string {
	if !strings.Contains(p, "\\") {
		return p
	}
	var b strings.Builder
	for i := 0; i < len(p); i++ {
		if p[i] == '\\' && i+3 < len(p) {
			if v, err := strconv.ParseUint(p[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(p[i])
	}
	return b.String()
}

// MountType returns the type of the topmost mount at path in the node's
// mount namespace, or "".
func (n *Node) MountType(_ context.Context, path string) string {
	mounts, err := n.mountInfo()
	if err != nil {
		return ""
	}
	typ := ""
	for _, m := range mounts {
		if m[0] == path {
			typ = m[1]
		}
	}
	return typ
}

// Mounts returns the mount points at or below dir in the node's mount
// namespace, in mount order.
func (n *Node) Mounts(_ context.Context, dir string) ([]string, error) {
	mounts, err := n.mountInfo()
	if err != nil {
		return nil, err
	}
	var found []string
	for _, m := range mounts {
		if m[0] == dir || strings.HasPrefix(m[0], dir+"/") {
			found = append(found, m[0])
		}
	}
	return found, nil
}

// UnmountAll lazily unmounts every mount at or below dir in the node,
// deepest first, and reports an error to t if some remain.
func (n *Node) UnmountAll(t testing.TB, dir string) {
	ctx := context.Background()
	for range 5 {
		found, err := n.Mounts(ctx, dir)
		if err != nil {
			t.Error(err)
			return
		}
		if len(found) == 0 {
			return
		}
		for _, m := range slices.Backward(found) {
			_ = n.Command(ctx, "umount", "-l", m).Run()
		}
	}
	t.Errorf("mounts remain below %s on node %s", dir, n.Name)
}

// DaemonPID returns the host PID of the daemon a started DaemonCommand
// runs: nsenter's child in a node, the command itself on the host.
func (n *Node) DaemonPID(ctx context.Context, cmd *exec.Cmd) (int, error) {
	if n.OnHost() {
		return cmd.Process.Pid, nil
	}
	children := fmt.Sprintf("/proc/%d/task/%d/children", cmd.Process.Pid, cmd.Process.Pid)
	for {
		raw, err := os.ReadFile(children)
		if err != nil {
			return 0, fmt.Errorf("the daemon's nsenter on node %s: %w", n.Name, err)
		}
		var pid int
		if _, err := fmt.Sscan(string(raw), &pid); err == nil {
			return pid, nil
		}
		select {
		case <-ctx.Done():
			return 0, fmt.Errorf("nsenter on node %s started no daemon: %w", n.Name, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}
