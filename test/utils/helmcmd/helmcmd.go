package helmcmd

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
)

// Env is the variable that names the helm binary.
const Env = "NODEPLUG_HELM"

// Command is helm run against the cluster of Kubeconfig, with its
// configuration, cache and data directories under Home.
type Command struct {
	Bin, Kubeconfig, Home string
}

// Run runs helm with args and --kubeconfig, and returns what it printed on
// standard output and standard error.
func (c *Command) Run(ctx context.Context, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, c.Bin, append(args, "--kubeconfig", c.Kubeconfig)...)
	cmd.Env = append(os.Environ(),
		"HELM_CONFIG_HOME="+filepath.Join(c.Home, "config"),
		"HELM_CACHE_HOME="+filepath.Join(c.Home, "cache"),
		"HELM_DATA_HOME="+filepath.Join(c.Home, "data"))
	out, err := cmd.CombinedOutput()
	return string(out), err
}
