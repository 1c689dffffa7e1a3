package pvops

import (
	"context"
	"fmt"
	"slices"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"

	"github.com/nodeplug/nodeplug/pkg/localpv/jobs"
	"github.com/nodeplug/nodeplug/pkg/localpv/metrics"
)

// Interface is the master's shared writes on its PVs and their claims.
type Interface interface {
	// Delete deletes a PV with a UID precondition and counts it under
	// reason. With exact, the delete also fails if the PV changed since it
	// was read, so a PV that was just bound is never deleted as unused; a
	// conflict is an error, a PV already gone is not.
	Delete(ctx context.Context, pv *v1.PersistentVolume, exact bool, reason string) error
	// RemoveFinalizer removes the cleanup-protection finalizer, letting
	// the PV go. A PV without it, or gone, is no error.
	RemoveFinalizer(ctx context.Context, pv *v1.PersistentVolume) error
	// WarnClaim puts a Warning Event on a PV's claim and, where the
	// apiserver serves it (feature gate CSIVolumeHealth), the condition
	// into the claim's status.healthStatus. The health write is
	// informational: a failure is logged, not returned. A PV without a
	// claimRef is a no-op.
	WarnClaim(ctx context.Context, pv *v1.PersistentVolume, reason, msg string, status v1.VolumeHealthStatusType)
	// ClearClaimHealth removes the health condition of a PV's claim.
	ClearClaimHealth(ctx context.Context, pv *v1.PersistentVolume)
}

type ops struct {
	kube     kubernetes.Interface
	recorder record.EventRecorder
	clock    clock.PassiveClock
}

var _ Interface = &ops{}

// New returns the executor.
func New(kube kubernetes.Interface, recorder record.EventRecorder, clk clock.PassiveClock) Interface {
	return &ops{kube: kube, recorder: recorder, clock: clk}
}

func (o *ops) Delete(ctx context.Context, pv *v1.PersistentVolume, exact bool, reason string) error {
	pre := &metav1.Preconditions{UID: &pv.UID}
	if exact {
		pre.ResourceVersion = &pv.ResourceVersion
	}
	err := o.kube.CoreV1().PersistentVolumes().Delete(ctx, pv.Name, metav1.DeleteOptions{Preconditions: pre})
	switch {
	case err == nil:
		metrics.PVsDeleted.WithLabelValues(reason).Inc()
	case apierrors.IsNotFound(err):
	case apierrors.IsConflict(err):
		return fmt.Errorf("PV %s changed, will look again: %w", pv.Name, err)
	default:
		return fmt.Errorf("failed to delete PV %s: %w", pv.Name, err)
	}
	return nil
}

func (o *ops) RemoveFinalizer(ctx context.Context, pv *v1.PersistentVolume) error {
	if !slices.Contains(pv.Finalizers, jobs.FinalizerPVProtection) {
		return nil
	}
	cp := pv.DeepCopy()
	cp.Finalizers = slices.DeleteFunc(cp.Finalizers, func(f string) bool { return f == jobs.FinalizerPVProtection })
	if _, err := o.kube.CoreV1().PersistentVolumes().Update(ctx, cp, metav1.UpdateOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("failed to remove finalizer of PV %s: %w", pv.Name, err)
	}
	return nil
}
