package blockedclaims_test

import (
	"errors"
	"maps"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	admissionlisters "k8s.io/client-go/listers/admissionregistration/v1"
	core "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2/ktesting"

	"github.com/nodeplug/nodeplug/pkg/localpv/controller/blockedclaims"
	"github.com/nodeplug/nodeplug/pkg/localpv/controller/blockedclaims/blockedclaimstest"
	"github.com/nodeplug/nodeplug/pkg/localpv/jobs"
)

func TestExpression(t *testing.T) {
	tests := []struct {
		name   string
		claims map[string]string
		want   string
	}{
		{name: "none", claims: map[string]string{}, want: "{}"},
		{name: "one", claims: map[string]string{"default.data-db-0": "local-pv-1"}, want: `{"default.data-db-0": "local-pv-1"}`},
		{name: "keys in order", claims: map[string]string{"b.c": "pv-2", "a.c": "pv-1"}, want: `{"a.c": "pv-1", "b.c": "pv-2"}`},
		{name: "quotes and backslashes are escaped", claims: map[string]string{`a."x\`: `p'v`}, want: `{"a.\"x\\": "p'v"}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := blockedclaims.Expression(tc.claims)
			if got != tc.want {
				t.Fatalf("expression = %s, want %s", got, tc.want)
			}
			back := blockedclaimstest.Eval(t, got)
			if len(back) != len(tc.claims) {
				t.Fatalf("CEL read back %v, want %v", back, tc.claims)
			}
			for k, v := range tc.claims {
				if back[k] != v {
					t.Errorf("CEL read back %q → %q, want %q", k, back[k], v)
				}
			}
		})
	}
}

const provisioner = "nodeplug.io/local-volume-provisioner"

// markedPV is a PV of the master Bound to default/<claim> (UID
// <claim>-uid), with the given mark label.
func markedPV(name, mark, claim string) *v1.PersistentVolume {
	pv := &v1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: name,
		Labels:      map[string]string{jobs.LabelManagedBy: jobs.ManagedByValue},
		Annotations: map[string]string{jobs.AnnProvisionedBy: provisioner}},
		Spec:   v1.PersistentVolumeSpec{ClaimRef: &v1.ObjectReference{Namespace: "default", Name: claim, UID: types.UID(claim + "-uid")}},
		Status: v1.PersistentVolumeStatus{Phase: v1.VolumeBound}}
	if mark != "" {
		pv.Labels[mark] = "true"
	}
	return pv
}

func claim(name string, uid types.UID) *v1.PersistentVolumeClaim {
	return &v1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: uid}}
}

type writerCase struct {
	name string
	pvs  []*v1.PersistentVolume
	// objs are the apiserver's claims and policies.
	objs []runtime.Object
	// warn runs the writer without a policy lister (ReplacedMachineWarn).
	warn bool
	// refuseUpdate makes the apiserver refuse the policy update.
	refuseUpdate bool
	// want is the policy's blockedClaims afterwards; nil means it was not
	// written.
	want       map[string]string
	wantErr    string
	wantEvents int
}

func TestSync(t *testing.T) {
	bound := markedPV("pv-1", jobs.LabelMachineReplaced, "claim")
	released := markedPV("pv-1", jobs.LabelMachineReplaced, "claim")
	released.Status.Phase = v1.VolumeReleased
	others := markedPV("pv-1", jobs.LabelMachineReplaced, "claim")
	others.Annotations[jobs.AnnProvisionedBy] = "someone-else"
	noVariable := blockedclaimstest.Policy()
	noVariable.Spec.Variables = noVariable.Spec.Variables[1:]
	written := blockedclaimstest.Policy()
	written.Spec.Variables[0].Expression = blockedclaims.Expression(map[string]string{
		"default.claim": blockedclaims.Value(bound, []*v1.PersistentVolume{bound})})
	tests := []writerCase{
		{name: "no marked PV writes nothing", pvs: []*v1.PersistentVolume{markedPV("pv-1", "", "claim")},
			objs: []runtime.Object{claim("claim", "claim-uid"), blockedclaimstest.Policy()}},
		{name: "a machine-replaced PV blocks its live claim", pvs: []*v1.PersistentVolume{bound},
			objs: []runtime.Object{claim("claim", "claim-uid"), blockedclaimstest.Policy()},
			want: map[string]string{"default.claim": "pv-1"}},
		{name: "a disk-replaced PV blocks its live claim", pvs: []*v1.PersistentVolume{markedPV("pv-2", jobs.LabelDiskReplaced, "data")},
			objs: []runtime.Object{claim("data", "data-uid"), blockedclaimstest.Policy()},
			want: map[string]string{"default.data": "pv-2"}},
		{name: "a claim created again under the name is not blocked", pvs: []*v1.PersistentVolume{bound},
			objs: []runtime.Object{claim("claim", "new-uid"), written}, want: map[string]string{}},
		{name: "a deleted claim is not blocked", pvs: []*v1.PersistentVolume{bound},
			objs: []runtime.Object{written}, want: map[string]string{}},
		{name: "a released PV blocks nothing", pvs: []*v1.PersistentVolume{released},
			objs: []runtime.Object{claim("claim", "claim-uid"), blockedclaimstest.Policy()}},
		{name: "another installation's PV is ignored", pvs: []*v1.PersistentVolume{others},
			objs: []runtime.Object{claim("claim", "claim-uid"), blockedclaimstest.Policy()}},
		{name: "an unchanged expression is not written again", pvs: []*v1.PersistentVolume{bound},
			objs: []runtime.Object{claim("claim", "claim-uid"), written}},
		{name: "a missing policy with nothing to block is no error",
			objs: []runtime.Object{}},
		{name: "under Warn nothing is read or written", pvs: []*v1.PersistentVolume{bound}, warn: true,
			objs: []runtime.Object{claim("claim", "claim-uid"), blockedclaimstest.Policy()}},
		{name: "a missing policy is an error and warns on the PV", pvs: []*v1.PersistentVolume{bound},
			objs: []runtime.Object{claim("claim", "claim-uid")}, wantErr: "not found", wantEvents: 1},
		{name: "a policy without the variable is an error", pvs: []*v1.PersistentVolume{bound},
			objs: []runtime.Object{claim("claim", "claim-uid"), noVariable}, wantErr: "has no variable blockedClaims", wantEvents: 1},
		{name: "a refused update is an error", pvs: []*v1.PersistentVolume{bound}, refuseUpdate: true,
			objs:    []runtime.Object{claim("claim", "claim-uid"), blockedclaimstest.Policy()},
			wantErr: "failed to write the blocked claims", wantEvents: 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { runWriterCase(t, tc) })
	}
}

func runWriterCase(t *testing.T, tc writerCase) {
	_, ctx := ktesting.NewTestContext(t)
	kube := fake.NewClientset(tc.objs...)
	if tc.refuseUpdate {
		kube.PrependReactor("update", "validatingadmissionpolicies", func(core.Action) (bool, runtime.Object, error) {
			return true, nil, errors.New("forbidden")
		})
	}
	recorder := record.NewFakeRecorder(10)
	cfg := blockedclaims.Config{PVs: pvList(tc.pvs),
		Owns:   func(pv *v1.PersistentVolume) bool { return pv.Annotations[jobs.AnnProvisionedBy] == provisioner },
		Claims: kube.CoreV1(), PolicyClient: kube.AdmissionregistrationV1(), Recorder: recorder}
	if !tc.warn {
		policyIndexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
		for _, o := range tc.objs {
			if p, ok := o.(*admissionv1.ValidatingAdmissionPolicy); ok {
				_ = policyIndexer.Add(p)
			}
		}
		cfg.Policies = admissionlisters.NewValidatingAdmissionPolicyLister(policyIndexer)
	}
	kube.ClearActions()
	err := blockedclaims.New(cfg).Sync(ctx)
	if tc.wantErr == "" && err != nil {
		t.Fatalf("Sync: %v", err)
	}
	if tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
		t.Fatalf("Sync error = %v, want one with %q", err, tc.wantErr)
	}
	if n := len(recorder.Events); n != tc.wantEvents {
		t.Errorf("%d Events, want %d", n, tc.wantEvents)
	}
	var got map[string]string
	for _, a := range kube.Actions() {
		if a.GetResource().Resource != "validatingadmissionpolicies" {
			continue
		}
		if tc.warn {
			t.Errorf("the writer touched the policy under Warn: %s", a.GetVerb())
		}
		if u, ok := a.(core.UpdateAction); ok && tc.wantErr == "" {
			got = blockedclaimstest.PVNames(blockedclaimstest.Eval(t,
				u.GetObject().(*admissionv1.ValidatingAdmissionPolicy).Spec.Variables[0].Expression))
		}
	}
	if (got == nil) != (tc.want == nil) || !maps.Equal(got, tc.want) {
		t.Errorf("policy written with %v, want %v (nil: no write)", got, tc.want)
	}
}

// TestCheck (review P1): the writer compiles what it writes; every
// expression Expression makes compiles, whatever the names hold, and a
// broken one is refused.
func TestCheck(t *testing.T) {
	tests := []struct {
		name    string
		expr    string
		wantErr bool
	}{
		{name: "empty", expr: blockedclaims.Expression(nil)},
		{name: "claims", expr: blockedclaims.Expression(map[string]string{blockedclaims.Key("ns", "data-0"): "pv-1", blockedclaims.Key("a", "b"): "pv-2"})},
		{name: "quotes and escapes in names", expr: blockedclaims.Expression(map[string]string{blockedclaims.Key("ns", "x\"y\\z\n"): "pv\u00e9"})},
		{name: "truncated", expr: `{"ns.a": "pv-1"`, wantErr: true},
		{name: "not a map", expr: `"ns.a"`, wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if err := blockedclaims.Check(tc.expr); (err != nil) != tc.wantErr {
				t.Errorf("Check(%s) = %v, want an error: %t", tc.expr, err, tc.wantErr)
			}
		})
	}
}

// pvList is the master's cache of PVs; each lookup filters it as the
// master's indexes do.
type pvList []*v1.PersistentVolume

func (l pvList) Marked() ([]*v1.PersistentVolume, error) {
	var out []*v1.PersistentVolume
	for _, pv := range l {
		if pv.Labels[jobs.LabelManagedBy] == jobs.ManagedByValue &&
			(pv.Labels[jobs.LabelMachineReplaced] == "true" || pv.Labels[jobs.LabelDiskReplaced] == "true") {
			out = append(out, pv)
		}
	}
	return out, nil
}

func (l pvList) OnNode(node string) ([]*v1.PersistentVolume, error) {
	var out []*v1.PersistentVolume
	for _, pv := range l {
		if pv.Labels[jobs.LabelManagedBy] == jobs.ManagedByValue && pv.Annotations[jobs.AnnNode] == node {
			out = append(out, pv)
		}
	}
	return out, nil
}

// TestBlockedCauseLooksOnItsNode (issue 37 item 2): a sync reads the marked
// PVs and the PVs of their nodes, not every PV of the cluster; the cause
// of a disk-replaced PV still names the PV of its node whose disk its path
// leads to, and never one of another node that records the same identity.
func TestBlockedCauseLooksOnItsNode(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	onNode := func(pv *v1.PersistentVolume, node, disk string) *v1.PersistentVolume {
		pv.Annotations[jobs.AnnNode], pv.Annotations[jobs.AnnDiskID] = node, disk
		return pv
	}
	replaced := onNode(markedPV("replaced", jobs.LabelDiskReplaced, "claim"), "n1", "wwn:naa.1")
	replaced.Annotations[jobs.AnnDiskReplaced] = "2026-01-01T00:00:00Z"
	replaced.Annotations[jobs.AnnDiskFound] = "wwn:naa.2"
	neighbour := onNode(markedPV("neighbour", "", "other"), "n1", "wwn:naa.2")
	elsewhere := onNode(markedPV("elsewhere", "", "third"), "n2", "wwn:naa.2")
	tests := []struct {
		name      string
		pvs       pvList
		wantNamed string
	}{
		{name: "the holder on its node", pvs: pvList{elsewhere, replaced, neighbour}, wantNamed: "PV neighbour"},
		{name: "only another node's PV records the disk", pvs: pvList{elsewhere, replaced}, wantNamed: "no PV records"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			kube := fake.NewClientset(claim("claim", "claim-uid"), blockedclaimstest.Policy())
			policies := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
			_ = policies.Add(blockedclaimstest.Policy())
			w := blockedclaims.New(blockedclaims.Config{PVs: tc.pvs,
				Owns:   func(pv *v1.PersistentVolume) bool { return pv.Annotations[jobs.AnnProvisionedBy] == provisioner },
				Claims: kube.CoreV1(), PolicyClient: kube.AdmissionregistrationV1(), Recorder: record.NewFakeRecorder(10),
				Policies: admissionlisters.NewValidatingAdmissionPolicyLister(policies)})
			if err := w.Sync(ctx); err != nil {
				t.Fatal(err)
			}
			var got map[string]string
			for _, a := range kube.Actions() {
				if u, ok := a.(core.UpdateAction); ok && a.GetResource().Resource == "validatingadmissionpolicies" {
					got = blockedclaimstest.Eval(t, u.GetObject().(*admissionv1.ValidatingAdmissionPolicy).Spec.Variables[0].Expression)
				}
			}
			if v := got["default.claim"]; !strings.Contains(v, tc.wantNamed) {
				t.Errorf("blocked claims %v, want default.claim's cause to hold %q", got, tc.wantNamed)
			}
		})
	}
}
