//go:build e2e

package framework

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// NodeSystemctl is the node's service manager (hack/tools/systemctl), at
// the path each namespaced node has it; by name a command could find the
// host's own systemctl first.
const NodeSystemctl = "/usr/local/sbin/systemctl"

// nodeUnitDir is where a namespaced node keeps its units (its own /run).
const nodeUnitDir = "/run/nodeplug/systemd"

// HasServiceManager reports whether the node's services are units of a
// service manager (a namespaced node), rather than processes local-up
// started on the host.
func (n *Node) HasServiceManager() bool { return !n.OnHost() }

// Systemctl runs the node's systemctl with args, as an operator on the
// node would, and returns its output.
func (n *Node) Systemctl(ctx context.Context, args ...string) (string, error) {
	if !n.HasServiceManager() {
		return "", errors.New("the host node has no service manager of local-up's")
	}
	out, err := n.Command(ctx, NodeSystemctl, args...).CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("systemctl %s on node %s: %w: %s", strings.Join(args, " "), n.Name, err, out)
	}
	return string(out), nil
}

// SetServiceEnvironment adds env (KEY=VALUE each) to the environment of
// the node's unit, in a drop-in of its own, as an operator's override does;
// nil removes it. It takes effect at the unit's next start.
func (n *Node) SetServiceEnvironment(unit string, env []string) error {
	dropIn := n.HostPath(filepath.Join(nodeUnitDir, unit+".service.d", "51-e2e-env.conf"))
	if env == nil {
		if err := os.Remove(dropIn); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		return nil
	}
	var b strings.Builder
	b.WriteString("[Service]\n")
	for _, kv := range env {
		if !strings.Contains(kv, "=") || strings.ContainsAny(kv, "\"\n") {
			return fmt.Errorf("environment %q is not KEY=VALUE without quotes or newlines", kv)
		}
		b.WriteString(`Environment="` + kv + "\"\n")
	}
	if err := os.MkdirAll(filepath.Dir(dropIn), 0o755); err != nil {
		return err
	}
	return os.WriteFile(dropIn, []byte(b.String()), 0o644)
}

// SetServiceCommand makes argv the command of the node's unit (a drop-in
// that replaces its ExecStart, as an operator's override does); nil
// removes the override. It takes effect at the unit's next start.
func (n *Node) SetServiceCommand(unit string, argv []string) error {
	dropIn := n.HostPath(filepath.Join(nodeUnitDir, unit+".service.d", "50-e2e.conf"))
	if argv == nil {
		if err := os.Remove(dropIn); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		return nil
	}
	q := make([]string, len(argv))
	for i, a := range argv {
		q[i] = `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(a) + `"`
	}
	if err := os.MkdirAll(filepath.Dir(dropIn), 0o755); err != nil {
		return err
	}
	return os.WriteFile(dropIn, []byte("[Service]\nExecStart=\nExecStart="+strings.Join(q, " ")+"\n"), 0o644)
}
