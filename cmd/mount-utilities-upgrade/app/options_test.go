package app

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestArguments: the flags and arguments, as the shell version took them,
// and each kind of bad input (exit 2 with the usage).
func TestArguments(t *testing.T) {
	t.Setenv(pollIntervalEnv, "")
	cases := []struct {
		name string
		args []string
		want string // namespace|daemonset|timeout|dry-run|nodes, or "exit N"
	}{
		{"defaults", []string{"node-a"}, "kube-mount|mount-utilities|300|false|node-a"},
		{"all flags", []string{"--namespace", "ns1", "--daemonset", "ds1", "--timeout", "20", "--dry-run", "node-a", "node-b"}, "ns1|ds1|20|true|node-a node-b"},
		{"flag=value", []string{"--namespace=ns2", "--timeout=5", "node-a", "--daemonset=d"}, "ns2|d|5|false|node-a"},
		{"double dash", []string{"--dry-run", "--", "node-a", "node.b"}, "kube-mount|mount-utilities|300|true|node-a node.b"},
		{"no node", []string{"--dry-run"}, "exit 2"},
		{"no arguments", nil, "exit 2"},
		{"unknown flag", []string{"--force", "node-a"}, "exit 2"},
		{"flag without value", []string{"node-a", "--timeout"}, "exit 2"},
		{"timeout not a number", []string{"--timeout", "5m", "node-a"}, "exit 2"},
		{"timeout zero", []string{"--timeout", "0", "node-a"}, "exit 2"},
		{"timeout too large", []string{"--timeout", "10000000", "node-a"}, "exit 2"},
		{"bad namespace", []string{"--namespace", "Kube_Mount", "node-a"}, "exit 2"},
		{"bad daemonset", []string{"--daemonset", "-x", "node-a"}, "exit 2"},
		{"bad node name", []string{"node a"}, "exit 2"},
		{"bad poll interval", []string{"--poll-interval", "0s", "node-a"}, "exit 2"},
		{"help", []string{"--help"}, "exit 0"},
		{"short help", []string{"-h", "node-a"}, "exit 0"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			got := ""
			code := execute(t.Context(), tc.args, &stdout, &stderr, func(_ context.Context, o *Options) int {
				got = fmt.Sprintf("%s|%s|%d|%v|%s", o.Namespace, o.DaemonSet, o.Timeout, o.DryRun, strings.Join(o.Nodes, " "))
				return 0
			})
			if got == "" {
				got = fmt.Sprintf("exit %d", code)
			}
			if got != tc.want {
				t.Fatalf("got %q, want %q\nstdout:\n%s\nstderr:\n%s", got, tc.want, stdout.String(), stderr.String())
			}
			switch {
			case code == 2 && (!strings.HasPrefix(stderr.String(), "error: ") || !strings.Contains(stderr.String(), "\nUsage: ")):
				t.Errorf("a usage error does not print the error and the usage:\n%s", stderr.String())
			case got == "exit 0" && !strings.HasPrefix(stdout.String(), "Usage: "):
				t.Errorf("--help does not print the usage:\n%s", stdout.String())
			}
		})
	}
}

func TestPollIntervalFromEnvironment(t *testing.T) {
	cases := []struct {
		name, env string
		want      time.Duration
	}{
		{"unset", "", 2 * time.Second},
		{"fraction of a second", "0.05", 50 * time.Millisecond},
		{"not a number", "soon", 2 * time.Second},
		{"negative", "-1", 2 * time.Second},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(pollIntervalEnv, tc.env)
			if got := NewOptions().PollInterval; got != tc.want {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestNoKubeconfig(t *testing.T) {
	t.Setenv("KUBECONFIG", "")
	t.Setenv("HOME", t.TempDir())
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	var stdout, stderr bytes.Buffer
	if code := Main(t.Context(), []string{"--kubeconfig", t.TempDir() + "/missing", "node-a"}, &stdout, &stderr); code != 2 {
		t.Fatalf("exit %d, want 2:\n%s", code, stderr.String())
	}
	if !strings.Contains(stderr.String(), "error: no kubeconfig") {
		t.Errorf("stderr does not say why:\n%s", stderr.String())
	}
}
