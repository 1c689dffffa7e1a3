package nodecleanup

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/nodeplug/nodeplug/pkg/localpv/controller/pvstate"
	"github.com/nodeplug/nodeplug/pkg/localpv/jobs"
	"github.com/nodeplug/nodeplug/pkg/localpv/metrics"
)

// Event reasons.
const (
	// ReasonNodeDeleted is the Warning on a released claim, its pods and its
	// PV.
	ReasonNodeDeleted = "NodeDeleted"
	// ReasonClaimKept is the Warning on a claim of a deleted node's PV that
	// is not released because it, or its binding, is newer than the
	// deletion.
	ReasonClaimKept = "NodeDeletedClaimKept"
	// ReasonNodeBack is the Event on a marked PV whose Node came back on the
	// same machine before its claim was deleted.
	ReasonNodeBack = "NodeBack"
)

// release releases the claims of the due PVs of a node that the cache shows
// missing. The apiserver is asked first: a Node that is back keeps every
// claim not yet marked. It is asked again once the PVs are marked, before
// anything is deleted.
func (c *controller) release(ctx context.Context, name string, since time.Time, due []*v1.PersistentVolume) error {
	node, err := c.liveNode(ctx, name)
	if err != nil {
		return err
	}
	if node != nil {
		klog.FromContext(ctx).V(2).Info("Node is back, no claim is released")
	}
	var errs []error
	var todo []*v1.PersistentVolume
	for _, pv := range due {
		switch {
		case marked(pv):
			todo = append(todo, pv)
		case node == nil:
			m, err := c.mark(ctx, pv, since)
			if err != nil {
				errs = append(errs, err)
			} else if m != nil {
				todo = append(todo, m)
			}
		}
	}
	if len(todo) > 0 && node == nil {
		if node, err = c.liveNode(ctx, name); err != nil {
			return errors.Join(append(errs, err)...)
		}
	}
	for _, pv := range todo {
		if node != nil && !machineDiffers(pv, node) {
			errs = append(errs, c.unmark(ctx, pv))
			continue
		}
		errs = append(errs, c.releaseClaim(ctx, pv))
	}
	return errors.Join(errs...)
}

// liveNode asks the apiserver for a Node; nil when it does not exist.
func (c *controller) liveNode(ctx context.Context, name string) (*v1.Node, error) {
	node, err := c.kube.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("failed to get node %s: %w", name, err)
	}
	return node, nil
}

// machineDiffers reports whether a Node runs on another machine than the one
// a PV was published for: a field that both know differs. An unknown field
// proves nothing, so a Node without an identity counts as the same machine.
func machineDiffers(pv *v1.PersistentVolume, node *v1.Node) bool {
	differs := func(a, b string) bool { return a != "" && b != "" && a != b }
	return differs(pv.Annotations[jobs.AnnMachineID], node.Status.NodeInfo.MachineID) ||
		differs(pv.Annotations[jobs.AnnSystemUUID], node.Status.NodeInfo.SystemUUID)
}

// mark checks a PV's claim and annotates the PV with the time its Node was
// seen deleted. It returns the annotated PV, or nil when the claim is kept.
func (c *controller) mark(ctx context.Context, pv *v1.PersistentVolume, since time.Time) (*v1.PersistentVolume, error) {
	logger := klog.FromContext(ctx)
	ref := pv.Spec.ClaimRef
	claim, err := c.kube.CoreV1().PersistentVolumeClaims(ref.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		logger.V(2).Info("The PV's claim is gone already", "pv", pv.Name, "claim", klog.KRef(ref.Namespace, ref.Name))
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("failed to get claim %s/%s of PV %s: %w", ref.Namespace, ref.Name, pv.Name, err)
	case claim.UID != ref.UID || claim.Spec.VolumeName != pv.Name:
		logger.V(2).Info("The claim of that name is not the PV's", "pv", pv.Name, "claim", klog.KObj(claim))
		return nil, nil
	}
	if why := newer(pv, claim, since); why != "" {
		if c.firstKept(claim.UID) {
			c.recorder.Eventf(claim, v1.EventTypeWarning, ReasonClaimKept,
				"PV %s is on node %s, deleted at %s, but the claim is not released: %s; delete it by hand if its pods must run elsewhere",
				pv.Name, pv.Annotations[jobs.AnnNode], stamp(since), why)
		}
		logger.V(2).Info("Claim is newer than the deletion of its PV's node, not released", "pv", pv.Name, "claim", klog.KObj(claim), "why", why)
		return nil, nil
	}
	m, _, err := c.marks.Apply(ctx, pv, pvstate.MarkNodeGone(since))
	if err != nil {
		return nil, err
	}
	logger.V(2).Info("Marked the PV of a deleted node", "pv", pv.Name, "claim", klog.KObj(claim))
	return m, nil
}

// newer says why a claim is too new to be released: created, or bound to the
// PV, when its Node was already gone (or within the same second; the API's
// times have whole seconds). Empty when it may be released.
func newer(pv *v1.PersistentVolume, claim *v1.PersistentVolumeClaim, since time.Time) string {
	limit := since.Truncate(time.Second)
	if !claim.CreationTimestamp.Time.Before(limit) {
		return fmt.Sprintf("it was created at %s, after the node was gone", stamp(claim.CreationTimestamp.Time))
	}
	if t := pv.Status.LastPhaseTransitionTime; t != nil && !t.Time.Before(limit) {
		return fmt.Sprintf("it was bound at %s, after the node was gone", stamp(t.Time))
	}
	return ""
}

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// unmark removes the mark of a PV whose Node came back on the same machine
// before its claim was deleted.
func (c *controller) unmark(ctx context.Context, pv *v1.PersistentVolume) error {
	if _, _, err := c.marks.Apply(ctx, pv, pvstate.ClearNodeGone); err != nil {
		return err
	}
	c.recorder.Eventf(pv, v1.EventTypeNormal, ReasonNodeBack, "Node %s is back on the same machine (or reports no machine identity); the PV and its claim are kept",
		pv.Annotations[jobs.AnnNode])
	return nil
}

// releaseClaim warns on a marked PV's claim and its pods, deletes the claim,
// then drops the PV unless its reclaim policy is Retain.
func (c *controller) releaseClaim(ctx context.Context, pv *v1.PersistentVolume) error {
	ref := pv.Spec.ClaimRef
	if ref == nil && deletes(pv) {
		return c.dropPV(ctx, pv) // made Available by hand since it was marked
	}
	if ref == nil {
		return nil
	}
	node, since := pv.Annotations[jobs.AnnNode], pv.Annotations[jobs.AnnNodeGone]
	claim, err := c.kube.CoreV1().PersistentVolumeClaims(ref.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		return fmt.Errorf("failed to get claim %s/%s of PV %s: %w", ref.Namespace, ref.Name, pv.Name, err)
	case claim.UID != ref.UID || claim.DeletionTimestamp != nil:
	default:
		msg := fmt.Sprintf("PV %s is on node %s, deleted at %s and not back: the claim is deleted so that a new one can bind "+
			"a PV on another node; the data on %s is not wiped and can no longer be reached", pv.Name, node, since, node)
		c.recorder.Eventf(claim, v1.EventTypeWarning, ReasonNodeDeleted, "%s", msg)
		for _, pod := range c.podsOfClaim(ctx, claim) {
			c.recorder.Eventf(pod, v1.EventTypeWarning, ReasonNodeDeleted, "Claim %s: %s", claim.Name, msg)
		}
		deleted, err := c.deleteClaim(ctx, claim)
		if err != nil {
			return err
		}
		if deleted && !deletes(pv) {
			c.recorder.Eventf(pv, v1.EventTypeWarning, ReasonNodeDeleted,
				"Node %s was deleted at %s and did not come back: claim %s/%s released; the PV is kept, as its reclaim policy %s asks",
				node, since, claim.Namespace, claim.Name, pv.Spec.PersistentVolumeReclaimPolicy)
		}
	}
	if !deletes(pv) {
		return nil
	}
	return c.dropPV(ctx, pv)
}

// deleteClaim deletes a claim with a UID precondition and reports whether
// it did.
func (c *controller) deleteClaim(ctx context.Context, claim *v1.PersistentVolumeClaim) (bool, error) {
	err := c.kube.CoreV1().PersistentVolumeClaims(claim.Namespace).Delete(ctx, claim.Name,
		metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &claim.UID}})
	switch {
	case err == nil:
		metrics.ClaimsReleased.WithLabelValues(metrics.ReasonNodeDeleted).Inc()
		klog.FromContext(ctx).Info("Deleted the claim of a deleted node's PV", "claim", klog.KObj(claim))
		return true, nil
	case apierrors.IsNotFound(err), apierrors.IsConflict(err):
		return false, nil // gone, or replaced by another claim of the same name: not ours
	}
	return false, fmt.Errorf("failed to delete claim %s/%s: %w", claim.Namespace, claim.Name, err)
}

// dropPV removes the master's finalizer from a marked PV and deletes it: the
// disk left with its machine, so nothing is wiped. The PV is read from the
// apiserver first: the cache may not show yet that it is being deleted.
func (c *controller) dropPV(ctx context.Context, pv *v1.PersistentVolume) error {
	live, err := c.kube.CoreV1().PersistentVolumes().Get(ctx, pv.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil
	case err != nil:
		return fmt.Errorf("failed to get PV %s: %w", pv.Name, err)
	case live.UID != pv.UID || live.DeletionTimestamp != nil:
		return nil // another PV of that name, or deleted already
	}
	pv = live
	if c.unwiped != nil {
		if err := c.unwiped.Remember(ctx, pv, "node "+pv.Annotations[jobs.AnnNode]+" deleted"); err != nil {
			return err
		}
	}
	if slices.Contains(pv.Finalizers, jobs.FinalizerPVProtection) {
		cp := pv.DeepCopy()
		cp.Finalizers = slices.DeleteFunc(cp.Finalizers, func(f string) bool { return f == jobs.FinalizerPVProtection })
		updated, err := c.kube.CoreV1().PersistentVolumes().Update(ctx, cp, metav1.UpdateOptions{})
		switch {
		case apierrors.IsNotFound(err):
			return nil
		case err != nil:
			return fmt.Errorf("failed to remove the finalizer of PV %s: %w", pv.Name, err)
		}
		pv = updated
	}
	err = c.kube.CoreV1().PersistentVolumes().Delete(ctx, pv.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &pv.UID}})
	switch {
	case apierrors.IsNotFound(err):
		return nil
	case err != nil:
		return fmt.Errorf("failed to delete PV %s: %w", pv.Name, err)
	}
	metrics.PVsDeleted.WithLabelValues(metrics.ReasonNodeDeleted).Inc()
	claim := "none"
	if ref := pv.Spec.ClaimRef; ref != nil {
		claim = ref.Namespace + "/" + ref.Name
	}
	c.recorder.Eventf(pv, v1.EventTypeWarning, ReasonNodeDeleted,
		"Node %s was deleted at %s and did not come back: claim %s released, PV deleted without a wipe",
		pv.Annotations[jobs.AnnNode], pv.Annotations[jobs.AnnNodeGone], claim)
	klog.FromContext(ctx).Info("Deleted the PV of a deleted node without a wipe", "pv", pv.Name)
	return nil
}
