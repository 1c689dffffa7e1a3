package controller

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/klog/v2"

	"github.com/nodeplug/nodeplug/pkg/localpv/jobs"
	"github.com/nodeplug/nodeplug/pkg/localpv/metrics"
)

// ReplacedMachineAdmissionPolicy is the default name of the
// ValidatingAdmissionPolicy that refuses new pods using a claim bound to a
// PV of a replaced machine.
const ReplacedMachineAdmissionPolicy = "local-volume-provisioner-replaced-machine-claims"

// BlockedClaimsVariable is the variable of that policy whose expression the
// master writes: a CEL map literal from "<namespace>.<claim>" (a namespace
// has no dot) to the PV's name. The policy reads no params object, so it
// does not depend on the apiserver resolving one.
const BlockedClaimsVariable = "blockedClaims"

const blockedClaimsKey = "claims/blocked"

// BlockedClaimKey is the key of a claim in the blocked claims.
func BlockedClaimKey(namespace, claim string) string { return namespace + "." + claim }

// BlockedClaimsExpression renders blocked claims as the CEL map literal the
// policy's variable holds, with its keys in order, so that the same claims
// always give the same expression.
func BlockedClaimsExpression(claims map[string]string) string {
	var b strings.Builder
	b.WriteString("{")
	for i, k := range slices.Sorted(maps.Keys(claims)) {
		if i > 0 {
			b.WriteString(", ")
		}
		// Go's quoting of a string is valid CEL: CEL takes the same escapes.
		b.WriteString(strconv.Quote(k) + ": " + strconv.Quote(claims[k]))
	}
	b.WriteString("}")
	return b.String()
}

// syncBlockedClaims writes the claims of PVs marked machine-replaced or
// disk-replaced into the admission policy and sets the gauges. Only a PV
// Bound to the live claim of its claimRef's name blocks it: a released PV,
// or a claim created again under the same name, blocks nothing. Under the
// Warn policy it neither reads nor writes the admission policy.
func (c *controller) syncBlockedClaims(ctx context.Context) error {
	all, err := c.pvLister.List(labels.SelectorFromSet(labels.Set{jobs.LabelManagedBy: jobs.ManagedByValue}))
	if err != nil {
		return err
	}
	var pvs []*v1.PersistentVolume
	replaced := 0
	for _, pv := range all {
		if !c.owns(pv) {
			continue
		}
		if pv.Labels[jobs.LabelMachineReplaced] == "true" {
			replaced++
		}
		if pv.Labels[jobs.LabelMachineReplaced] == "true" || pv.Labels[jobs.LabelDiskReplaced] == "true" {
			pvs = append(pvs, pv)
		}
	}
	metrics.ReplacedMachineVolumes.Set(float64(replaced))
	if c.opts.ReplacedMachinePolicy != ReplacedMachineBlockPods || c.policyLister == nil {
		metrics.BlockedClaims.Set(0)
		return nil
	}
	want := map[string]string{}
	for _, pv := range pvs {
		live, err := c.liveClaimOf(ctx, pv)
		if err != nil {
			return fmt.Errorf("failed to read the claim of PV %s: %w", pv.Name, err)
		}
		if live {
			ref := pv.Spec.ClaimRef
			want[BlockedClaimKey(ref.Namespace, ref.Name)] = pv.Name
		}
	}
	if err := c.writeBlockedClaims(ctx, want); err != nil {
		metrics.BlockedClaims.Set(0)
		c.warnUnenforced(pvs, err)
		return err
	}
	metrics.BlockedClaims.Set(float64(len(want)))
	return nil
}

func (c *controller) writeBlockedClaims(ctx context.Context, want map[string]string) error {
	name := c.opts.AdmissionPolicyName
	policy, err := c.policyLister.Get(name)
	if apierrors.IsNotFound(err) {
		if len(want) == 0 {
			return nil
		}
		return fmt.Errorf("ValidatingAdmissionPolicy %s not found, so pods of %d blocked claims are not refused: "+
			"apply deploy/local-volume-provisioner/admission-policy.yaml: %w", name, len(want), err)
	}
	if err != nil {
		return fmt.Errorf("failed to get ValidatingAdmissionPolicy %s: %w", name, err)
	}
	i := slices.IndexFunc(policy.Spec.Variables, func(v admissionv1.Variable) bool { return v.Name == BlockedClaimsVariable })
	if i < 0 {
		return fmt.Errorf("ValidatingAdmissionPolicy %s has no variable %s, so no claim is blocked: "+
			"apply deploy/local-volume-provisioner/admission-policy.yaml", name, BlockedClaimsVariable)
	}
	expr := BlockedClaimsExpression(want)
	if policy.Spec.Variables[i].Expression == expr {
		return nil
	}
	policy = policy.DeepCopy()
	policy.Spec.Variables[i].Expression = expr
	if _, err := c.kube.AdmissionregistrationV1().ValidatingAdmissionPolicies().Update(ctx, policy, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("failed to write the blocked claims into ValidatingAdmissionPolicy %s: %w", name, err)
	}
	klog.FromContext(ctx).V(2).Info("Wrote the blocked claims", "policy", name, "claims", len(want))
	return nil
}

// warnUnenforced puts a Warning Event on each bound PV of a replaced
// machine when its claim could not be blocked.
func (c *controller) warnUnenforced(pvs []*v1.PersistentVolume, err error) {
	if c.opts.ReplacedMachinePolicy != ReplacedMachineBlockPods {
		return
	}
	for _, pv := range pvs {
		if pv.Spec.ClaimRef != nil {
			c.event(pv, v1.EventTypeWarning, "ClaimNotBlocked", "New pods of claim %s/%s are not refused: %v",
				pv.Spec.ClaimRef.Namespace, pv.Spec.ClaimRef.Name, err)
		}
	}
}
