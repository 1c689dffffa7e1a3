package pvops

import (
	"context"
	"encoding/json"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/nodeplug/nodeplug/pkg/localpv/controller/pvstate"
)

// maxHealthMessage is the API's bound of a volume health condition message.
const maxHealthMessage = 1024

func (o *ops) WarnClaim(ctx context.Context, pv *v1.PersistentVolume, reason, msg string, status v1.VolumeHealthStatusType) {
	ref := pv.Spec.ClaimRef
	if ref == nil || ref.UID == pvstate.HeldClaimUID {
		return // no claim, or the held claim, which never exists
	}
	o.recorder.Eventf(&v1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: ref.Name, Namespace: ref.Namespace, UID: ref.UID}},
		v1.EventTypeWarning, reason, "PV %s: %s", pv.Name, msg)
	health := &v1.VolumeHealthStatus{
		HealthConditions:   []v1.VolumeHealthCondition{{Status: status, Reason: reason, Message: Truncate(msg, maxHealthMessage)}},
		LastTransitionTime: metav1.NewTime(o.clock.Now()),
	}
	o.patchClaimHealth(ctx, ref, health)
}

func (o *ops) ClearClaimHealth(ctx context.Context, pv *v1.PersistentVolume) {
	if ref := pv.Spec.ClaimRef; ref != nil && ref.UID != pvstate.HeldClaimUID {
		o.patchClaimHealth(ctx, ref, nil)
	}
}

// patchClaimHealth writes status.healthStatus of the claim a PV's claimRef
// names; the UID in the patch makes it fail on a re-created claim of the
// same name.
func (o *ops) patchClaimHealth(ctx context.Context, ref *v1.ObjectReference, health *v1.VolumeHealthStatus) {
	patch := map[string]any{"status": map[string]any{"healthStatus": health}}
	if ref.UID != "" {
		patch["metadata"] = map[string]any{"uid": ref.UID}
	}
	body, err := json.Marshal(patch)
	if err != nil {
		return
	}
	_, err = o.kube.CoreV1().PersistentVolumeClaims(ref.Namespace).Patch(ctx, ref.Name, types.MergePatchType, body,
		metav1.PatchOptions{}, "status")
	if err != nil && !apierrors.IsNotFound(err) {
		klog.FromContext(ctx).V(2).Info("Could not write the claim's health status", "claim", klog.KRef(ref.Namespace, ref.Name), "err", err)
	}
}
