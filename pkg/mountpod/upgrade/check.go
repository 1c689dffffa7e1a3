package upgrade

import (
	"context"
	"errors"
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/klog/v2"
)

// check loads the DaemonSet, the node and the node's mount pods.
func (r *nodeRun) check(ctx context.Context) error {
	if err := r.loadDaemonSet(ctx); err != nil {
		return err
	}
	if err := r.loadNode(ctx); err != nil {
		return err
	}
	if err := r.loadMountPods(ctx); err != nil {
		return fail(ExitFailed, "", "listing the pods of %s: %v", r.dsName(), err)
	}
	return nil
}

func (r *nodeRun) dsName() string { return r.cfg.Namespace + "/" + r.cfg.DaemonSet }

// getError maps a failed get: no such object is a precondition (2), any
// other error a failed call (1).
func getError(err error) error {
	if apierrors.IsNotFound(err) {
		return fail(ExitUsage, "", "%v", err)
	}
	return fail(ExitFailed, "", "%v", err)
}

// loadDaemonSet checks the DaemonSet (exit 2 if missing or not OnDelete),
// waits until its controller has seen its latest spec, and finds its
// current revision (the hash of its newest ControllerRevision).
func (r *nodeRun) loadDaemonSet(ctx context.Context) error {
	err := r.poll(ctx, func() (bool, error) {
		ds, err := r.client.AppsV1().DaemonSets(r.cfg.Namespace).Get(ctx, r.cfg.DaemonSet, metav1.GetOptions{})
		if err != nil {
			return false, getError(err)
		}
		r.ds = ds
		return ds.Status.ObservedGeneration >= ds.Generation, nil
	})
	if errors.Is(err, errWaitTimeout) {
		return fail(ExitTimeout, "check that kube-controller-manager runs", "the DaemonSet controller has not seen generation %d of %s within %s s",
			r.ds.Generation, r.dsName(), seconds(r.cfg.Timeout))
	}
	if err != nil {
		return err
	}
	if s := r.ds.Spec.UpdateStrategy.Type; s != appsv1.OnDeleteDaemonSetStrategyType {
		if s == "" {
			s = appsv1.RollingUpdateDaemonSetStrategyType
		}
		return fail(ExitUsage, "set spec.updateStrategy.type: OnDelete (deploy/mount-utilities/daemonset.yaml), then run this command",
			"DaemonSet %s has updateStrategy %s, not OnDelete: with it the DaemonSet controller replaces mount pods itself, killing the FUSE daemons of volumes in use", r.dsName(), s)
	}
	sel, err := metav1.LabelSelectorAsSelector(r.ds.Spec.Selector)
	if err != nil || sel.Empty() {
		return fail(ExitUsage, "", "DaemonSet %s has an empty or invalid selector: %v", r.dsName(), err)
	}
	r.selector = sel
	return r.loadRevision(ctx)
}

func (r *nodeRun) loadRevision(ctx context.Context) error {
	revs, err := r.client.AppsV1().ControllerRevisions(r.cfg.Namespace).List(ctx, metav1.ListOptions{LabelSelector: r.selector.String()})
	if err != nil {
		return fail(ExitFailed, "", "listing the ControllerRevisions of %s: %v", r.dsName(), err)
	}
	var newest *appsv1.ControllerRevision
	for i := range revs.Items {
		rev := &revs.Items[i]
		if ownedBy(rev.OwnerReferences, r.ds) && (newest == nil || rev.Revision > newest.Revision) {
			newest = rev
		}
	}
	if newest == nil {
		return fail(ExitUsage, "try again in a moment", "DaemonSet %s has no ControllerRevision yet", r.dsName())
	}
	r.rev = newest.Labels[appsv1.DefaultDaemonSetUniqueLabelKey]
	if r.rev == "" {
		r.rev = strings.TrimPrefix(newest.Name, r.cfg.DaemonSet+"-")
	}
	return nil
}

func ownedBy(refs []metav1.OwnerReference, ds *appsv1.DaemonSet) bool {
	for _, ref := range refs {
		if ref.UID == ds.UID {
			return true
		}
	}
	return false
}

// loadNode reads the node and the upgrade taint on it.
func (r *nodeRun) loadNode(ctx context.Context) error {
	node, err := r.client.CoreV1().Nodes().Get(ctx, r.node, metav1.GetOptions{})
	if err != nil {
		return getError(err)
	}
	r.tainted, r.taintValue = false, ""
	for _, t := range node.Spec.Taints {
		if t.Key == TaintKey && t.Effect == TaintEffect {
			r.tainted, r.taintValue = true, t.Value
			break
		}
	}
	return nil
}

// loadMountPods finds the DaemonSet's pods on the node that are not being
// deleted: the old one (not of the current revision) and the new one (of
// the current revision, a Ready one first).
func (r *nodeRun) loadMountPods(ctx context.Context) error {
	pods, err := r.client.CoreV1().Pods(r.cfg.Namespace).List(ctx, metav1.ListOptions{
		LabelSelector: r.selector.String(),
		FieldSelector: fields.OneTermEqualSelector("spec.nodeName", r.node).String(),
	})
	if err != nil {
		return err
	}
	r.old, r.oldRev, r.newPod, r.newReady = nil, "", nil, false
	for i := range pods.Items {
		pod := &pods.Items[i]
		if pod.Spec.NodeName != r.node || pod.DeletionTimestamp != nil || !ownedBy(pod.OwnerReferences, r.ds) {
			continue
		}
		rev := pod.Labels[appsv1.DefaultDaemonSetUniqueLabelKey]
		switch {
		case rev == r.rev:
			if ready := podReady(pod); r.newPod == nil || (ready && !r.newReady) {
				r.newPod, r.newReady = pod, ready
			}
		case r.old == nil:
			r.old, r.oldRev = pod, orDash(rev)
		default:
			r.once("oldPods", fmt.Sprintf("more than one old mount pod on the node; upgrading %s first, %s on the next run", r.old.Name, pod.Name))
		}
	}
	return nil
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func podReady(pod *v1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == v1.PodReady {
			return c.Status == v1.ConditionTrue
		}
	}
	return false
}

func images(pod *v1.Pod) string {
	var imgs []string
	for _, c := range pod.Spec.Containers {
		imgs = append(imgs, c.Image)
	}
	return strings.Join(imgs, ",")
}

// taintValueFor is the value of the taint for the old pod: its name, or its
// UID if the name is longer than a taint value may be.
func taintValueFor(pod *v1.Pod) string {
	if len(pod.Name) <= 63 {
		return pod.Name
	}
	return string(pod.UID)
}

// toleratesForever reports whether tolerations tolerate the upgrade taint
// of value without a tolerationSeconds, as the taint-eviction controller
// decides.
func toleratesForever(logger klog.Logger, tolerations []v1.Toleration, value string) bool {
	taint := &v1.Taint{Key: TaintKey, Value: value, Effect: TaintEffect}
	for i := range tolerations {
		if tolerations[i].TolerationSeconds == nil && tolerations[i].ToleratesTaint(logger, taint, false) {
			return true
		}
	}
	return false
}

// checkTolerations fails (2) unless the old pod and the DaemonSet's
// template tolerate the taint for ever: else tainting would evict the mount
// pod before the volumes it serves are unmounted.
func (r *nodeRun) checkTolerations(ctx context.Context) error {
	logger := klog.FromContext(ctx)
	value := taintValueFor(r.old)
	for _, w := range []struct {
		what string
		tol  []v1.Toleration
	}{{"pod", r.old.Spec.Tolerations}, {"template", r.ds.Spec.Template.Spec.Tolerations}} {
		if !toleratesForever(logger, w.tol, value) {
			return fail(ExitUsage, "add 'tolerations: [{operator: Exists}]' to the DaemonSet's pod template, delete this node's pod by hand once, then run this command",
				"the %s of %s does not tolerate the taint %s:%s: it would evict the mount pod with the volumes it serves still mounted",
				w.what, r.dsName(), TaintKey, TaintEffect)
		}
	}
	return nil
}
