package app

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/nodeplug/nodeplug/pkg/mountpod/podexec"
	"github.com/nodeplug/nodeplug/pkg/mountpod/upgrade"
)

const usageText = `Usage: mount-utilities-upgrade [--namespace NS] [--daemonset NAME] [--timeout SECONDS] [--dry-run] NODE...

Upgrades the mount-utilities DaemonSet (updateStrategy OnDelete) on each
NODE in turn: taint the node ` + upgrade.TaintKey + `=<pod>:NoExecute
so that the pods using the volumes of the plugins its mount pod serves are
evicted, wait until none is in use, delete the old mount pod, wait until the
DaemonSet's new pod is Ready, untaint. Refuses (exit 3) while a pod that
tolerates the taint still uses such a volume. Run it again after an
interruption: it resumes.

  --namespace NS          namespace of the DaemonSet (default kube-mount)
  --daemonset NAME        name of the DaemonSet (default mount-utilities)
  --timeout SECONDS       limit of each wait: drain, delete, new pod Ready (default 300)
  --dry-run               print what it would do; change nothing
  --kubeconfig PATH       kubeconfig (default $KUBECONFIG, else ~/.kube/config)
  --poll-interval DUR     how often a wait looks again (default 2s, or $MU_POLL_INTERVAL seconds)
  -h, --help              print this help

Exit codes: 0 done, 1 an API call failed or the old pod's mount table
could not be read (it needs pods/exec, and sh and cat in the pod), 2 usage
or precondition, 3 refused (volume in use by a pod that tolerates the
taint), 4 timeout, 130 interrupted.
`

// usageError is bad input on the command line: exit 2 with the usage.
type usageError struct{ error }

// Main runs the command with args and returns its exit code.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return execute(ctx, args, stdout, stderr, func(ctx context.Context, o *Options) int {
		client, exec, err := newClients(o.Kubeconfig)
		if err != nil {
			fmt.Fprintf(stderr, "error: %v\n", err)
			return upgrade.ExitUsage
		}
		return upgrade.New(client, exec, o.Config(), upgrade.RealClock{}, stdout, stderr).Run(ctx, o.Nodes)
	})
}

// execute parses args and calls run with valid options; bad input is exit
// 2 with the usage on stderr, --help exit 0 with it on stdout.
func execute(ctx context.Context, args []string, stdout, stderr io.Writer, run func(context.Context, *Options) int) int {
	code := upgrade.ExitOK
	cmd := NewCommand(run, &code)
	cmd.SetArgs(args)
	cmd.SetOut(stdout)
	cmd.SetErr(stderr)
	if err := cmd.ExecuteContext(ctx); err != nil {
		if _, ok := errors.AsType[usageError](err); ok {
			fmt.Fprintf(stderr, "error: %v\n\n%s", err, usageText)
		} else {
			fmt.Fprintf(stderr, "error: %v\n", err)
		}
		return upgrade.ExitUsage
	}
	return code
}

// NewCommand returns the command; run does the work once the options are
// valid, and its exit code goes to *code.
func NewCommand(run func(context.Context, *Options) int, code *int) *cobra.Command {
	o := NewOptions()
	cmd := &cobra.Command{
		Use:           "mount-utilities-upgrade [flags] NODE...",
		Short:         "Upgrade the mount-utilities DaemonSet node by node",
		SilenceErrors: true,
		SilenceUsage:  true,
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Nodes = args
			if err := o.Validate(); err != nil {
				return usageError{err}
			}
			*code = run(cmd.Context(), o)
			return nil
		},
	}
	o.AddFlags(cmd.Flags())
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	cmd.SetHelpFunc(func(c *cobra.Command, _ []string) { fmt.Fprint(c.OutOrStdout(), usageText) })
	return cmd
}

// newClients returns the clientset and the pods/exec executor of the
// kubeconfig (path, else the default loading rules).
func newClients(kubeconfig string) (kubernetes.Interface, upgrade.PodExec, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = kubeconfig
	config, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return nil, nil, fmt.Errorf("no kubeconfig: %w (pass --kubeconfig or set KUBECONFIG)", err)
	}
	config = rest.CopyConfig(config)
	config.UserAgent = "mount-utilities-upgrade"
	client, err := kubernetes.NewForConfig(config)
	if err != nil {
		return nil, nil, fmt.Errorf("building the API client: %w", err)
	}
	return client, podexec.NewAPIExecutor(config, client.CoreV1().RESTClient(), nil, 0), nil
}
