package upgrade

import (
	"context"
	"io"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"

	"github.com/nodeplug/nodeplug/pkg/mountpod"
)

// The taint that evicts the consumers of a node's mount pod. Its value is
// the old pod's name (its UID if the name is longer than 63 characters).
const (
	TaintKey    = "nodeplug.io/mount-utilities-upgrade"
	TaintEffect = v1.TaintEffectNoExecute
)

// Config is what to upgrade and how long to wait.
type Config struct {
	Namespace, DaemonSet string
	// Timeout bounds each wait: the DaemonSet controller catching up, the
	// drain, the delete, the new pod getting Ready, and each exec.
	Timeout time.Duration
	// PollInterval is how often a wait looks again.
	PollInterval time.Duration
	// DryRun reads the same state, prints what it would do and changes
	// nothing.
	DryRun bool
}

// PodExec runs a command in a container of a pod through the API server
// (pods/exec). pkg/mountpod/podexec.APIExecutor implements it.
type PodExec interface {
	ExecInPod(ctx context.Context, t mountpod.Target, argv []string, timeout time.Duration) (stdout, stderr []byte, err error)
}

// Clock tells the time and waits. Sleep returns ctx's error when ctx ends
// first.
type Clock interface {
	Now() time.Time
	Sleep(ctx context.Context, d time.Duration) error
}

// RealClock is the wall clock.
type RealClock struct{}

// Now returns time.Now().
func (RealClock) Now() time.Time { return time.Now() }

// Sleep waits d or until ctx ends.
func (RealClock) Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// Upgrader runs the procedure on nodes, one after the other. It is not safe
// for concurrent use.
type Upgrader struct {
	client kubernetes.Interface
	exec   PodExec
	cfg    Config
	clock  Clock
	report
}

// New returns an Upgrader that writes progress to out and errors and
// warnings to errOut.
func New(client kubernetes.Interface, exec PodExec, cfg Config, clock Clock, out, errOut io.Writer) *Upgrader {
	return &Upgrader{client: client, exec: exec, cfg: cfg, clock: clock, report: report{out: out, err: errOut, clock: clock}}
}

// Run upgrades nodes in turn, stops at the first that does not end well,
// prints the summary and returns the exit code.
func (u *Upgrader) Run(ctx context.Context, nodes []string) int {
	defer u.finish()
	for _, node := range nodes {
		u.startNode(node)
		if err := u.upgradeNode(ctx, node); err != nil {
			if ctx.Err() != nil {
				err = &Failure{Code: ExitInterrupted, Msg: ctx.Err().Error()}
			}
			return u.failed(err)
		}
	}
	return ExitOK
}

// nodeRun is the state of one node's upgrade.
type nodeRun struct {
	*Upgrader
	node string

	ds       *appsv1.DaemonSet
	selector labels.Selector
	rev      string

	tainted    bool
	taintValue string // of the taint found on the node, or set by this run

	old      *v1.Pod
	oldRev   string
	newPod   *v1.Pod
	newReady bool

	flex, intree []string
	inUse        []use
	said         map[string]string // messages said once, by kind
}

func (u *Upgrader) upgradeNode(ctx context.Context, node string) error {
	r := &nodeRun{Upgrader: u, node: node, said: map[string]string{}}
	u.startStep("check")
	if err := r.check(ctx); err != nil {
		return err
	}
	u.doneStep()
	if r.old == nil {
		return r.finishWithoutOld(ctx)
	}
	if r.tainted {
		u.say("resuming: the node is tainted %s=%s:%s", TaintKey, r.taintValue, TaintEffect)
	}
	u.say("pod %s runs revision %s; the DaemonSet's is %s", r.old.Name, r.oldRev, r.rev)
	if err := r.checkTolerations(ctx); err != nil {
		return err
	}
	r.loadPlugins()
	// Before tainting: a pod that would stay makes it refuse with nothing changed.
	if err := r.scanInUse(ctx); err != nil {
		return err
	}
	if r.hasToleratingUser() {
		return r.refuse(ctx)
	}
	old, oldRev := r.old, r.oldRev // waitReady reloads the mount pods
	for _, step := range []func(context.Context) error{r.taint, r.drain, r.deleteOld, r.waitReady, r.untaint} {
		if err := step(ctx); err != nil {
			return err
		}
	}
	if u.cfg.DryRun {
		u.record("dry run: would upgrade " + old.Name + " (revision " + oldRev + " -> " + r.rev + ")")
	} else {
		u.record("upgraded " + old.Name + " -> " + r.newPod.Name + " (" + images(r.newPod) + ")")
	}
	return nil
}
