//go:build e2e

package framework

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
)

// NodeSystemctl is the node's service manager (hack/tools/systemctl), at
// the path each namespaced node has it; by name a command could find the
// host's own systemctl first.
const NodeSystemctl = "/usr/local/sbin/systemctl"

// nodeUnitDir is where a namespaced node keeps its units (its own /run);
// remoteUnitDir is where systemd on a machine of an existing cluster reads
// runtime drop-ins (gone at the next boot). A node of an existing cluster
// that has nodeUnitDir runs local-up's service manager (the local cluster
// reached over SSH).
const (
	nodeUnitDir   = "/run/nodeplug/systemd"
	remoteUnitDir = "/run/systemd/system"
)

// HasServiceManager reports whether the node's services are units of a
// service manager (a namespaced node, or a machine of an existing
// cluster), rather than processes local-up started on the host.
func (n *Node) HasServiceManager() bool { return !n.OnHost() }

// Systemctl runs the node's systemctl with args, as an operator on the
// node would, and returns its output.
func (n *Node) Systemctl(ctx context.Context, args ...string) (string, error) {
	if !n.HasServiceManager() {
		return "", errors.New("the host node has no service manager of local-up's")
	}
	systemctl := NodeSystemctl
	if n.Remote() {
		systemctl = "systemctl"
	}
	out, err := n.Command(ctx, systemctl, args...).CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("systemctl %s on node %s: %w: %s", strings.Join(args, " "), n.Name, err, out)
	}
	return string(out), nil
}

// SetServiceEnvironment adds env (KEY=VALUE each) to the environment of
// the node's unit, in a drop-in of its own, as an operator's override does;
// nil removes it. It takes effect at the unit's next start.
func (n *Node) SetServiceEnvironment(ctx context.Context, unit string, env []string) error {
	dropIn := n.dropIn(ctx, unit, "51-e2e-env.conf")
	if env == nil {
		return n.removeDropIn(ctx, dropIn)
	}
	var b strings.Builder
	b.WriteString("[Service]\n")
	for _, kv := range env {
		if !strings.Contains(kv, "=") || strings.ContainsAny(kv, "\"\n") {
			return fmt.Errorf("environment %q is not KEY=VALUE without quotes or newlines", kv)
		}
		b.WriteString(`Environment="` + kv + "\"\n")
	}
	return n.writeDropIn(ctx, dropIn, b.String())
}

// SetServiceCommand makes argv the command of the node's unit (a drop-in
// that replaces its ExecStart, as an operator's override does); nil
// removes the override. It takes effect at the unit's next start.
func (n *Node) SetServiceCommand(ctx context.Context, unit string, argv []string) error {
	dropIn := n.dropIn(ctx, unit, "50-e2e.conf")
	if argv == nil {
		return n.removeDropIn(ctx, dropIn)
	}
	q := make([]string, len(argv))
	for i, a := range argv {
		q[i] = `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(a) + `"`
	}
	return n.writeDropIn(ctx, dropIn, "[Service]\nExecStart=\nExecStart="+strings.Join(q, " ")+"\n")
}

// dropIn is the path, as the node sees it, of the unit's drop-in file.
func (n *Node) dropIn(ctx context.Context, unit, file string) string {
	dir := nodeUnitDir
	if n.Remote() && n.Command(ctx, "test", "-d", nodeUnitDir).Run() != nil {
		dir = remoteUnitDir
	}
	return filepath.Join(dir, unit+".service.d", file)
}

// writeDropIn writes a drop-in on the node; systemd on a machine of an
// existing cluster reads it after a daemon-reload (local-up's service
// manager reads units at each start).
func (n *Node) writeDropIn(ctx context.Context, path, content string) error {
	if err := n.MkdirAll(ctx, filepath.Dir(path)); err != nil {
		return err
	}
	if err := n.WriteFile(ctx, path, []byte(content), 0o644); err != nil {
		return err
	}
	return n.daemonReload(ctx)
}

func (n *Node) removeDropIn(ctx context.Context, path string) error {
	if err := n.RemoveAll(ctx, path); err != nil {
		return err
	}
	return n.daemonReload(ctx)
}

func (n *Node) daemonReload(ctx context.Context) error {
	if !n.Remote() {
		return nil
	}
	_, err := n.Systemctl(ctx, "daemon-reload")
	return err
}
