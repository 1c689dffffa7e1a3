package upgrade

import (
	"context"
	"errors"
	"fmt"
	"slices"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
)

// The steps that change the cluster. Under DryRun each only says what it
// would do.

// setTaint adds the upgrade taint with value (add) or removes it.
func (r *nodeRun) setTaint(ctx context.Context, value string, add bool) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		node, err := r.client.CoreV1().Nodes().Get(ctx, r.node, metav1.GetOptions{})
		if err != nil {
			return err
		}
		taints := slices.DeleteFunc(slices.Clone(node.Spec.Taints), func(t v1.Taint) bool {
			return t.Key == TaintKey && t.Effect == TaintEffect
		})
		if add {
			now := metav1.NewTime(r.clock.Now())
			taints = append(taints, v1.Taint{Key: TaintKey, Value: value, Effect: TaintEffect, TimeAdded: &now})
		} else if len(taints) == len(node.Spec.Taints) {
			return nil
		}
		node.Spec.Taints = taints
		_, err = r.client.CoreV1().Nodes().Update(ctx, node, metav1.UpdateOptions{})
		return err
	})
}

func (r *nodeRun) taint(ctx context.Context) error {
	value := taintValueFor(r.old)
	if r.tainted && r.taintValue == value {
		r.say("already tainted %s=%s:%s", TaintKey, value, TaintEffect)
		return nil
	}
	if r.cfg.DryRun {
		r.say("dry run: would taint %s=%s:%s", TaintKey, value, TaintEffect)
		r.tainted, r.taintValue = true, value
		return nil
	}
	r.startStep("taint")
	if err := r.setTaint(ctx, value, true); err != nil {
		return fail(ExitFailed, "", "could not taint the node: %v", err)
	}
	r.tainted, r.taintValue = true, value
	r.doneStep()
	return nil
}

// untaintAfterFailure removes the taint on a refusal, a drain timeout or an
// unreadable mount table: the old pod still runs, so the node goes back to
// what it was. nothing is said when the node was not tainted.
func (r *nodeRun) untaintAfterFailure(ctx context.Context, nothing string) {
	switch {
	case !r.tainted:
		r.say("%s", nothing)
	case r.cfg.DryRun:
		r.say("dry run: would remove the taint %s:%s", TaintKey, TaintEffect)
	default:
		if err := r.setTaint(ctx, "", false); err != nil {
			r.warn("could not remove the taint (%v): run %s", err, untaintCommand(r.node))
			return
		}
		r.tainted = false
		r.say("removed the taint %s:%s; %s still runs", TaintKey, TaintEffect, r.old.Name)
	}
}

// drain waits until no served volume is in use; it refuses (3) when a pod
// that tolerates the taint uses one, and untaints and fails with 4 on
// timeout.
func (r *nodeRun) drain(ctx context.Context) error {
	if r.cfg.DryRun {
		if len(r.inUse) > 0 {
			r.say("dry run: would wait up to %d s until these are gone (the taint evicts the pods):", r.timeoutSeconds())
			r.lines(false, r.describe(false))
		} else {
			r.say("dry run: no volume of these plugins is in use now")
		}
		return nil
	}
	r.startStep("drain")
	last := ""
	err := r.poll(ctx, func() (bool, error) {
		if err := r.scanInUse(ctx); err != nil {
			if _, stop := errors.AsType[*Failure](err); stop || ctx.Err() != nil {
				return false, err
			}
			r.warn("%v; retrying", err)
			return false, nil
		}
		if r.hasToleratingUser() {
			return false, r.refuse(ctx)
		}
		lines := r.describe(false)
		if now := fmt.Sprint(lines); len(lines) > 0 && now != last {
			r.say("waiting for these to go:")
			r.lines(false, lines)
			last = now
		}
		return len(r.inUse) == 0, nil
	})
	if errors.Is(err, errWaitTimeout) {
		fmt.Fprintf(r.err, "[%s] timed out after %d s; still in use:\n", r.node, r.timeoutSeconds())
		r.lines(true, r.describe(false))
		r.untaintAfterFailure(ctx, "the node was not tainted")
		return fail(ExitTimeout, "find out why those pods or volumes stay (a PodDisruptionBudget does not apply to taint eviction; a finalizer or a stuck unmount may), or raise --timeout",
			"%s was not deleted: never delete a mount pod while a volume it serves is mounted", r.old.Name)
	}
	if err != nil {
		return err
	}
	r.doneStep()
	return nil
}

func (r *nodeRun) timeoutSeconds() int { return int(r.cfg.Timeout.Seconds()) }

// deleteOld deletes the old pod and waits until it is gone.
func (r *nodeRun) deleteOld(ctx context.Context) error {
	if r.cfg.DryRun {
		r.say("dry run: would delete pod %s/%s (revision %s -> %s)", r.cfg.Namespace, r.old.Name, r.oldRev, r.rev)
		return nil
	}
	r.startStep("delete")
	const hint = "the node stays tainted; run the command again to finish"
	pods := r.client.CoreV1().Pods(r.cfg.Namespace)
	err := pods.Delete(ctx, r.old.Name, metav1.DeleteOptions{Preconditions: metav1.NewUIDPreconditions(string(r.old.UID))})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fail(ExitFailed, hint, "deleting %s: %v", r.old.Name, err)
	}
	err = r.poll(ctx, func() (bool, error) {
		p, err := pods.Get(ctx, r.old.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		if err != nil {
			return false, fmt.Errorf("waiting for %s to be gone: %w", r.old.Name, err)
		}
		return p.UID != r.old.UID, nil
	})
	if err != nil {
		return timedOut(err, fmt.Sprintf("deleting %s: timed out after %d s waiting for the pod to be gone", r.old.Name, r.timeoutSeconds()), hint)
	}
	r.doneStep()
	return nil
}
