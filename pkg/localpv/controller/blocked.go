package controller

import (
	"context"
	"fmt"
	"maps"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/klog/v2"

	"github.com/nodeplug/nodeplug/pkg/localpv/jobs"
	"github.com/nodeplug/nodeplug/pkg/localpv/metrics"
)

// BlockedClaimsConfigMap is the ConfigMap, in the master's namespace, that
// lists the claims bound to PVs of replaced machines: one key
// "<namespace>.<claim>" per claim (a namespace has no dot), the PV's name as
// value. The admission policy
// local-volume-provisioner-replaced-machine-claims refuses pods that use a
// listed claim.
const BlockedClaimsConfigMap = "local-volume-provisioner-blocked-claims"

const blockedClaimsKey = "claims/blocked"

// BlockedClaimKey is the ConfigMap key of a claim.
func BlockedClaimKey(namespace, claim string) string { return namespace + "." + claim }

// syncBlockedClaims writes the blocked-claims ConfigMap from the PV cache
// and sets the replaced-machine gauge. Under the Warn policy the ConfigMap
// lists nothing.
func (c *controller) syncBlockedClaims(ctx context.Context) error {
	pvs, err := c.pvLister.List(labels.SelectorFromSet(labels.Set{
		jobs.LabelManagedBy: jobs.ManagedByValue, jobs.LabelMachineReplaced: "true"}))
	if err != nil {
		return err
	}
	metrics.ReplacedMachineVolumes.Set(float64(len(pvs)))
	want := map[string]string{}
	if c.opts.ReplacedMachinePolicy == ReplacedMachineBlockPods {
		for _, pv := range pvs {
			if ref := pv.Spec.ClaimRef; ref != nil && pv.DeletionTimestamp == nil {
				want[BlockedClaimKey(ref.Namespace, ref.Name)] = pv.Name
			}
		}
	}
	c.mu.Lock()
	same := c.blockedClaims != nil && maps.Equal(c.blockedClaims, want)
	c.mu.Unlock()
	if same {
		return nil
	}
	if err := c.writeBlockedClaims(ctx, want); err != nil {
		return err
	}
	c.mu.Lock()
	c.blockedClaims = want
	c.mu.Unlock()
	klog.FromContext(ctx).V(2).Info("Wrote the blocked claims", "claims", len(want))
	return nil
}

func (c *controller) writeBlockedClaims(ctx context.Context, want map[string]string) error {
	cms := c.kube.CoreV1().ConfigMaps(c.opts.Jobs.Namespace)
	cm, err := cms.Get(ctx, BlockedClaimsConfigMap, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		cm = &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: BlockedClaimsConfigMap, Namespace: c.opts.Jobs.Namespace,
			Labels: map[string]string{jobs.LabelManagedBy: jobs.ManagedByValue}}, Data: want}
		if _, err := cms.Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("failed to create ConfigMap %s: %w", BlockedClaimsConfigMap, err)
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("failed to get ConfigMap %s: %w", BlockedClaimsConfigMap, err)
	}
	if maps.Equal(cm.Data, want) {
		return nil
	}
	cm = cm.DeepCopy()
	cm.Data = want
	if _, err := cms.Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("failed to update ConfigMap %s: %w", BlockedClaimsConfigMap, err)
	}
	return nil
}
