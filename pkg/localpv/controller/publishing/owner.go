package publishing

import (
	"context"
	"encoding/json"
	"fmt"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodeplug/nodeplug/pkg/localpv/jobs"
	"github.com/nodeplug/nodeplug/pkg/localpv/metrics"
)

// claimClass makes sure a StorageClass is this installation's: a class
// without an owner is claimed; a class another installation claimed is
// refused, with an Event on it that names both and the fix, so that two
// masters never publish and wipe the same disks.
func (p *publisher) claimClass(ctx context.Context, sc *storagev1.StorageClass) (bool, error) {
	me := p.OwnerName
	switch owner := sc.Annotations[jobs.AnnClassOwner]; owner {
	case me:
		return true, nil
	case "":
	default:
		metrics.ClassConflicts.WithLabelValues(sc.Name).Inc()
		p.Recorder.Eventf(sc, v1.EventTypeWarning, "ClassOwnedByAnotherInstallation",
			"StorageClass %s is published by the local volume provisioner %s; this one (%s) publishes and wipes nothing of it. "+
				"Remove the class from one installation's storageClassMap; to move it, delete the other installation and run "+
				"kubectl annotate storageclass %s %s-", sc.Name, owner, me, sc.Name, jobs.AnnClassOwner)
		return false, nil
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{
		"resourceVersion": sc.ResourceVersion, "annotations": map[string]string{jobs.AnnClassOwner: me}}})
	if err != nil {
		return false, err
	}
	if _, err := p.Kube.StorageV1().StorageClasses().Patch(ctx, sc.Name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		return false, fmt.Errorf("failed to claim StorageClass %s for %s: %w", sc.Name, me, err)
	}
	return true, nil
}
