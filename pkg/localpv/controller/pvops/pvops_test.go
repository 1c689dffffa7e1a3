package pvops_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	core "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2/ktesting"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/nodeplug/nodeplug/pkg/localpv/controller/pvops"
	"github.com/nodeplug/nodeplug/pkg/localpv/controller/pvstate"
	"github.com/nodeplug/nodeplug/pkg/localpv/jobs"
)

var start = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func testPV(finalizers ...string) *v1.PersistentVolume {
	return &v1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv-1", UID: "pv-uid", ResourceVersion: "7", Finalizers: finalizers},
		Spec: v1.PersistentVolumeSpec{ClaimRef: &v1.ObjectReference{Namespace: "default", Name: "claim", UID: "claim-uid"}}}
}

func TestDelete(t *testing.T) {
	tests := []struct {
		name    string
		exact   bool
		fail    error
		wantRV  bool
		wantErr string
	}{
		{name: "by UID", wantRV: false},
		{name: "exact adds the resourceVersion", exact: true, wantRV: true},
		{name: "a PV already gone is no error", fail: apierrors.NewNotFound(schema.GroupResource{Resource: "persistentvolumes"}, "pv-1")},
		{name: "a changed PV is looked at again", exact: true, wantRV: true,
			fail: apierrors.NewConflict(schema.GroupResource{Resource: "persistentvolumes"}, "pv-1", errors.New("rv")), wantErr: "changed, will look again"},
		{name: "another failure is an error", fail: errors.New("forbidden"), wantErr: "failed to delete PV pv-1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			kube := fake.NewClientset()
			var got *metav1.Preconditions
			kube.PrependReactor("delete", "persistentvolumes", func(a core.Action) (bool, runtime.Object, error) {
				got = a.(core.DeleteAction).GetDeleteOptions().Preconditions
				return true, nil, tc.fail
			})
			err := pvops.New(kube, record.NewFakeRecorder(10), testingclock.NewFakeClock(start)).Delete(ctx, testPV(), tc.exact, "test")
			if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Fatalf("Delete error = %v, want %q", err, tc.wantErr)
			}
			if got == nil || got.UID == nil || *got.UID != "pv-uid" || (got.ResourceVersion != nil) != tc.wantRV {
				t.Errorf("preconditions %+v, want UID pv-uid and resourceVersion %t", got, tc.wantRV)
			}
		})
	}
}

func TestRemoveFinalizer(t *testing.T) {
	tests := []struct {
		name       string
		pv         *v1.PersistentVolume
		wantUpdate bool
		wantLeft   []string
	}{
		{name: "a PV without the finalizer is not written", pv: testPV("kubernetes.io/pv-protection")},
		{name: "only the master's finalizer goes", pv: testPV("kubernetes.io/pv-protection", jobs.FinalizerPVProtection),
			wantUpdate: true, wantLeft: []string{"kubernetes.io/pv-protection"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			kube := fake.NewClientset(tc.pv)
			kube.ClearActions()
			if err := pvops.New(kube, record.NewFakeRecorder(10), testingclock.NewFakeClock(start)).RemoveFinalizer(ctx, tc.pv); err != nil {
				t.Fatal(err)
			}
			if updated := len(kube.Actions()) > 0; updated != tc.wantUpdate {
				t.Fatalf("PV written = %t, want %t", updated, tc.wantUpdate)
			}
			pv, _ := kube.CoreV1().PersistentVolumes().Get(ctx, "pv-1", metav1.GetOptions{})
			if tc.wantUpdate && strings.Join(pv.Finalizers, ",") != strings.Join(tc.wantLeft, ",") {
				t.Errorf("finalizers %v, want %v", pv.Finalizers, tc.wantLeft)
			}
		})
	}
	t.Run("a PV already gone is no error", func(t *testing.T) {
		_, ctx := ktesting.NewTestContext(t)
		err := pvops.New(fake.NewClientset(), record.NewFakeRecorder(10), testingclock.NewFakeClock(start)).
			RemoveFinalizer(ctx, testPV(jobs.FinalizerPVProtection))
		if err != nil {
			t.Errorf("RemoveFinalizer of a PV that is gone: %v", err)
		}
	})
}

func TestClaimHealth(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	claim := &v1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "claim", UID: "claim-uid"}}
	kube := fake.NewClientset(claim)
	recorder := record.NewFakeRecorder(10)
	ops := pvops.New(kube, recorder, testingclock.NewFakeClock(start))

	ops.WarnClaim(ctx, testPV(), "DiskReplaced", strings.Repeat("x", 2000), v1.VolumeHealthDataLoss)
	got, _ := kube.CoreV1().PersistentVolumeClaims("default").Get(ctx, "claim", metav1.GetOptions{})
	h := got.Status.HealthStatus
	if h == nil || len(h.HealthConditions) != 1 || h.HealthConditions[0].Reason != "DiskReplaced" ||
		h.HealthConditions[0].Status != v1.VolumeHealthDataLoss || len(h.HealthConditions[0].Message) != 1024+len("...") {
		t.Fatalf("health status %+v, want one DataLoss condition with the message cut at 1024", h)
	}
	if len(recorder.Events) != 1 || !strings.Contains(<-recorder.Events, "Warning DiskReplaced PV pv-1: xxx") {
		t.Error("no Warning Event on the claim")
	}

	ops.ClearClaimHealth(ctx, testPV())
	if got, _ := kube.CoreV1().PersistentVolumeClaims("default").Get(ctx, "claim", metav1.GetOptions{}); got.Status.HealthStatus != nil {
		t.Errorf("health status not cleared: %+v", got.Status.HealthStatus)
	}

	kube.ClearActions()
	unclaimed := testPV()
	unclaimed.Spec.ClaimRef = nil
	ops.WarnClaim(ctx, unclaimed, "DiskReplaced", "gone", v1.VolumeHealthDataLoss)
	ops.ClearClaimHealth(ctx, unclaimed)
	if len(kube.Actions()) != 0 || len(recorder.Events) != 0 {
		t.Errorf("a PV without a claim wrote %v", kube.Actions())
	}

	held, _ := pvstate.Hold("disk-1").Preview(testPV(), start)
	ops.WarnClaim(ctx, held, "VolumeMissing", "gone", v1.VolumeHealthInaccessible)
	ops.ClearClaimHealth(ctx, held)
	if len(kube.Actions()) != 0 || len(recorder.Events) != 0 {
		t.Errorf("a held PV warned its claim, which never exists: %v", kube.Actions())
	}
}
