package blockedclaims

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	admissionclient "k8s.io/client-go/kubernetes/typed/admissionregistration/v1"
	coreclient "k8s.io/client-go/kubernetes/typed/core/v1"
	admissionlisters "k8s.io/client-go/listers/admissionregistration/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"

	"github.com/nodeplug/nodeplug/pkg/localpv/controller/pvops"
	"github.com/nodeplug/nodeplug/pkg/localpv/controller/pvstate"
	"github.com/nodeplug/nodeplug/pkg/localpv/jobs"
	"github.com/nodeplug/nodeplug/pkg/localpv/metrics"
)

// DefaultPolicyName is the default name of the ValidatingAdmissionPolicy
// that refuses new pods using a claim bound to a PV of a replaced machine.
const DefaultPolicyName = "local-volume-provisioner-replaced-machine-claims"

// Variable is the variable of that policy whose expression the writer
// writes: a CEL map literal from "<namespace>.<claim>" (a namespace has no
// dot) to Value: the PV's name and the cause. The policy reads no params object, so it does not
// depend on the apiserver resolving one.
const Variable = "blockedClaims"

// maxCause bounds the cause in a blocked claim's value.
const maxCause = 512

// Value is a blocked claim's value: the PV's name and why its claim is
// refused, with the fix (pvstate.Cause), which the policy's message shows.
// onNode are the PVs of its node, among which the holder of the disk found
// at a disk-replaced PV's path is looked for.
func Value(pv *v1.PersistentVolume, onNode []*v1.PersistentVolume) string {
	return "PV " + pv.Name + ", because " + pvops.Truncate(pvstate.Cause(pv, pvstate.HolderAmong(pv, onNode)), maxCause)
}

// Key is the key of a claim in the blocked claims.
func Key(namespace, claim string) string { return namespace + "." + claim }

// Expression renders blocked claims as the CEL map literal the policy's
// variable holds, with its keys in order, so that the same claims always
// give the same expression.
func Expression(claims map[string]string) string {
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

// Check compiles a blocked-claims expression as the apiserver would, so
// that the writer never writes one that breaks the policy: with
// failurePolicy Fail, every pod creation the policy looks at would be
// refused.
func Check(expr string) error {
	env, err := cel.NewEnv()
	if err != nil {
		return err
	}
	ast, iss := env.Compile(expr)
	if iss.Err() != nil {
		return fmt.Errorf("the blocked claims do not compile: %w", iss.Err())
	}
	if k := ast.OutputType().Kind(); k != types.MapKind {
		return fmt.Errorf("the blocked claims are a %v, not a map", ast.OutputType())
	}
	return nil
}

// Writer keeps the policy's blocked claims equal to the claims of the
// master's marked PVs.
type Writer interface {
	// Sync counts the marked PVs and, when pods are blocked, writes the
	// claims of those Bound to the live claim of their claimRef's name
	// into the policy if they differ from what it holds. A policy that is
	// missing or lacks the variable while a claim should be blocked is an
	// error, and each marked PV gets a ClaimNotBlocked Event. It is
	// idempotent and safe to call at any time.
	Sync(ctx context.Context) error
}

// PVs finds PVs in the master's cache by its indexes, so that a sync
// reads the marked PVs and their nodes' PVs, not every PV of the cluster.
type PVs interface {
	// Marked returns the PVs of the provisioners (managed) labelled
	// machine-replaced or disk-replaced.
	Marked() ([]*v1.PersistentVolume, error)
	// OnNode returns the managed PVs of a node name.
	OnNode(node string) ([]*v1.PersistentVolume, error)
}

// Config is what a Writer reads and writes.
type Config struct {
	// PVs finds PersistentVolumes in the master's cache.
	PVs PVs
	// Owns reports whether a PV is this master's.
	Owns func(*v1.PersistentVolume) bool
	// Claims reads the claims of marked PVs from the apiserver.
	Claims coreclient.PersistentVolumeClaimsGetter
	// Policies lists the admission policy from the master's cache; nil
	// means pods are not blocked (ReplacedMachineWarn): Sync then only
	// sets the gauges.
	Policies admissionlisters.ValidatingAdmissionPolicyLister
	// PolicyClient updates the policy.
	PolicyClient admissionclient.ValidatingAdmissionPoliciesGetter
	// PolicyName names the policy; empty means DefaultPolicyName.
	PolicyName string
	// Recorder records the ClaimNotBlocked Events.
	Recorder record.EventRecorder
}

type writer struct{ Config }

var _ Writer = &writer{}

// New returns a Writer.
func New(cfg Config) Writer {
	if cfg.PolicyName == "" {
		cfg.PolicyName = DefaultPolicyName
	}
	return &writer{cfg}
}

func (w *writer) Sync(ctx context.Context) error {
	marked, err := w.PVs.Marked()
	if err != nil {
		return err
	}
	var pvs []*v1.PersistentVolume
	replaced := 0
	for _, pv := range marked {
		if !w.Owns(pv) {
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
	if w.Policies == nil {
		metrics.BlockedClaims.Set(0)
		return nil
	}
	want, err := w.blocked(ctx, pvs)
	if err != nil {
		return err
	}
	if err := w.write(ctx, want); err != nil {
		metrics.BlockedClaims.Set(0)
		w.warnUnenforced(pvs, err)
		return err
	}
	metrics.BlockedClaims.Set(float64(len(want)))
	return nil
}

// blocked returns the blocked claims of the marked PVs, each with the PV
// and its cause. A claim is read from the apiserver each time: the master
// caches no claims, and one deleted and created again under its name is
// not blocked.
func (w *writer) blocked(ctx context.Context, pvs []*v1.PersistentVolume) (map[string]string, error) {
	want := map[string]string{}
	for _, pv := range pvs {
		live, err := w.liveClaimOf(ctx, pv)
		if err != nil {
			return nil, fmt.Errorf("failed to read the claim of PV %s: %w", pv.Name, err)
		}
		if !live {
			continue
		}
		onNode, err := w.PVs.OnNode(pv.Annotations[jobs.AnnNode])
		if err != nil {
			return nil, err
		}
		ref := pv.Spec.ClaimRef
		want[Key(ref.Namespace, ref.Name)] = Value(pv, onNode)
	}
	return want, nil
}

// liveClaimOf reports whether a PV is Bound to the claim that exists now
// under its claimRef's name: a claim deleted and created again under the
// same name is another claim.
func (w *writer) liveClaimOf(ctx context.Context, pv *v1.PersistentVolume) (bool, error) {
	ref := pv.Spec.ClaimRef
	if ref == nil || pv.Status.Phase != v1.VolumeBound || pv.DeletionTimestamp != nil {
		return false, nil
	}
	claim, err := w.Claims.PersistentVolumeClaims(ref.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return false, nil
	case err != nil:
		return false, err
	}
	return ref.UID == "" || claim.UID == ref.UID, nil
}

func (w *writer) write(ctx context.Context, want map[string]string) error {
	name := w.PolicyName
	policy, err := w.Policies.Get(name)
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
	i := slices.IndexFunc(policy.Spec.Variables, func(v admissionv1.Variable) bool { return v.Name == Variable })
	if i < 0 {
		return fmt.Errorf("ValidatingAdmissionPolicy %s has no variable %s, so no claim is blocked: "+
			"apply deploy/local-volume-provisioner/admission-policy.yaml", name, Variable)
	}
	expr := Expression(want)
	if policy.Spec.Variables[i].Expression == expr {
		return nil
	}
	if err := Check(expr); err != nil {
		return fmt.Errorf("refusing to write the blocked claims into ValidatingAdmissionPolicy %s: %w", name, err)
	}
	policy = policy.DeepCopy()
	policy.Spec.Variables[i].Expression = expr
	if _, err := w.PolicyClient.ValidatingAdmissionPolicies().Update(ctx, policy, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("failed to write the blocked claims into ValidatingAdmissionPolicy %s: %w", name, err)
	}
	klog.FromContext(ctx).V(2).Info("Wrote the blocked claims", "policy", name, "claims", len(want))
	return nil
}

// warnUnenforced puts a Warning Event on each bound PV of a replaced
// machine when its claim could not be blocked.
func (w *writer) warnUnenforced(pvs []*v1.PersistentVolume, err error) {
	for _, pv := range pvs {
		if pv.Spec.ClaimRef != nil {
			w.Recorder.Eventf(pv, v1.EventTypeWarning, "ClaimNotBlocked", "New pods of claim %s/%s are not refused: %v",
				pv.Spec.ClaimRef.Namespace, pv.Spec.ClaimRef.Name, err)
		}
	}
}
