package upgrade

import (
	"context"
	"fmt"
)

// waitReady waits until the DaemonSet's pod of the current revision on the
// node is Ready; on timeout it fails with 4 and leaves the taint (a node
// without a working mount pod should not get consumers back).
func (r *nodeRun) waitReady(ctx context.Context) error {
	if r.cfg.DryRun {
		r.say("dry run: would wait up to %d s for the new pod (revision %s) to be Ready", r.timeoutSeconds(), r.rev)
		return nil
	}
	r.startStep("ready")
	err := r.poll(ctx, func() (bool, error) {
		if err := r.loadMountPods(ctx); err != nil {
			if ctx.Err() != nil {
				return false, err
			}
			r.warn("listing the pods of %s: %v; retrying", r.dsName(), err)
			return false, nil
		}
		return r.newPod != nil && r.newReady, nil
	})
	if err != nil {
		name, notReady := "<pod>", ""
		if r.newPod != nil {
			name, notReady = r.newPod.Name, fmt.Sprintf(" (%s is not Ready)", r.newPod.Name)
		}
		return timedOut(err,
			fmt.Sprintf("no Ready pod of %s revision %s on the node after %d s%s; the node stays tainted", r.dsName(), r.rev, r.timeoutSeconds(), notReady),
			fmt.Sprintf("see kubectl -n %s describe pod %s; run the command again once it is Ready, or untaint by hand: %s", r.cfg.Namespace, name, untaintCommand(r.node)))
	}
	r.say("new pod %s is Ready, image %s", r.newPod.Name, images(r.newPod))
	r.doneStep()
	return nil
}

func (r *nodeRun) untaint(ctx context.Context) error {
	if !r.tainted {
		return nil
	}
	if r.cfg.DryRun {
		r.say("dry run: would remove the taint %s:%s", TaintKey, TaintEffect)
		return nil
	}
	r.startStep("untaint")
	if err := r.setTaint(ctx, "", false); err != nil {
		return fail(ExitFailed, "run "+untaintCommand(r.node), "could not remove the taint: %v", err)
	}
	r.tainted = false
	r.doneStep()
	return nil
}

// finishWithoutOld handles a node whose old pod is gone: it waits for the
// new pod (if it is not Ready yet) and untaints (if tainted).
func (r *nodeRun) finishWithoutOld(ctx context.Context) error {
	if !r.tainted && r.newPod == nil {
		return fail(ExitUsage, "check the DaemonSet's node selector and the node's taints; nothing to upgrade here",
			"no pod of %s on the node", r.dsName())
	}
	if !r.tainted && r.newReady {
		r.say("up to date: %s runs revision %s and is Ready (%s)", r.newPod.Name, r.rev, images(r.newPod))
		r.record("up to date")
		return nil
	}
	if r.tainted {
		r.say("resuming: the node is tainted %s=%s:%s and that pod is gone", TaintKey, r.taintValue, TaintEffect)
	}
	if r.newReady {
		r.say("pod %s of revision %s is Ready, image %s", r.newPod.Name, r.rev, images(r.newPod))
	} else if err := r.waitReady(ctx); err != nil {
		return err
	}
	if err := r.untaint(ctx); err != nil {
		return err
	}
	if r.cfg.DryRun {
		r.record("dry run: would finish")
	} else {
		r.record("finished: " + r.newPod.Name + " (" + images(r.newPod) + ")")
	}
	return nil
}
