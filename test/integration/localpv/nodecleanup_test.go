package localpv

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2/ktesting"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/nodeplug/nodeplug/pkg/localpv/config"
	"github.com/nodeplug/nodeplug/pkg/localpv/jobs"
	"github.com/nodeplug/nodeplug/pkg/localpv/nodecleanup"
)

// releaseClasses: "fast" releases the claims of deleted nodes after 10
// minutes, "slow" never does.
const releaseClasses = "fast:\n  hostDir: /mnt/fast\n  releaseClaimsOfDeletedNodesAfter: 10m\nslow:\n  hostDir: /mnt/slow\n"

// TestReleaseClaimsOfDeletedNode runs the release of claims on deleted nodes
// with the master's shipped RBAC against a real apiserver: once the Node is
// deleted and the delay has passed on the controller's clock, the claim of
// the opted-in class is deleted (it waits for the pvc-protection
// controller, which this control plane lacks), its PV loses the master's
// finalizer and is deleted, the claim, the StatefulSet pod and the PV get
// Warning Events, and the claim of the other class is untouched.
func TestReleaseClaimsOfDeletedNode(t *testing.T) {
	e := newEnv(t, "namespace.yaml", "rbac-master.yaml")
	e.grantMasterRights(t, []string{"fast", "slow"}, true)
	c := e.cp.Client
	e.createNode(t, "node-a")
	e.setMachine(t, "node-a", "m1", "u1")
	if _, err := c.CoreV1().ServiceAccounts("default").Create(t.Context(),
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	e.boundPVAndClaim(t, "pv-fast", "fast", "data-web-0")
	e.boundPVAndClaim(t, "pv-slow", "slow", "data-db-0")
	for pod, claim := range map[string]string{"web-0": "data-web-0", "db-0": "data-db-0"} {
		if _, err := c.CoreV1().Pods("default").Create(t.Context(), claimPod(pod, claim), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// The controller's clock starts a second ahead, so that the claims are
	// older than the deletion even within the API's whole seconds.
	clock := testingclock.NewFakeClock(time.Now().Add(time.Second))
	e.startNodeCleanup(t, clock)

	if err := c.CoreV1().Nodes().Delete(t.Context(), "node-a", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	poll(t, "claim data-web-0 deleted", func(ctx context.Context) (bool, error) {
		clock.Step(10 * time.Minute) // until the controller has seen the deletion and its delay passed
		pvc, err := c.CoreV1().PersistentVolumeClaims("default").Get(ctx, "data-web-0", metav1.GetOptions{})
		return apierrors.IsNotFound(err) || (err == nil && pvc.DeletionTimestamp != nil), client404(err)
	})
	poll(t, "PV pv-fast deleted without the master's finalizer", func(ctx context.Context) (bool, error) {
		pv, err := c.CoreV1().PersistentVolumes().Get(ctx, "pv-fast", metav1.GetOptions{})
		return apierrors.IsNotFound(err) || (err == nil && pv.DeletionTimestamp != nil &&
			!slices.Contains(pv.Finalizers, jobs.FinalizerPVProtection) && pv.Annotations[jobs.AnnNodeGone] != ""), client404(err)
	})
	e.waitForEvent(t, "PersistentVolumeClaim", "data-web-0", nodecleanup.ReasonNodeDeleted, "PV pv-fast is on node node-a")
	e.waitForEvent(t, "Pod", "web-0", nodecleanup.ReasonNodeDeleted, "Claim data-web-0: PV pv-fast")
	e.waitForEvent(t, "PersistentVolume", "pv-fast", nodecleanup.ReasonNodeDeleted, "PV deleted without a wipe")

	pvc, err := c.CoreV1().PersistentVolumeClaims("default").Get(t.Context(), "data-db-0", metav1.GetOptions{})
	if err != nil || pvc.DeletionTimestamp != nil {
		t.Fatalf("the claim of a class that does not release claims: %v, %v", pvc, err)
	}
	pv, err := c.CoreV1().PersistentVolumes().Get(t.Context(), "pv-slow", metav1.GetOptions{})
	if err != nil || pv.DeletionTimestamp != nil || pv.Annotations[jobs.AnnNodeGone] != "" {
		t.Fatalf("the PV of a class that does not release claims: %v, %v", pv, err)
	}
}

// boundPVAndClaim creates a PV as the master publishes it on node-a
// (machine m1/u1) and a claim bound to it, as the PV controller binds them.
func (e *env) boundPVAndClaim(t *testing.T, pvName, class, claim string) {
	t.Helper()
	c := e.cp.Client
	size := resource.MustParse("10Gi")
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: pvName, Labels: map[string]string{jobs.LabelManagedBy: jobs.ManagedByValue},
			Annotations: map[string]string{jobs.AnnNode: "node-a", jobs.AnnClass: class, jobs.AnnHostPath: "/mnt/" + class + "/" + pvName,
				jobs.AnnMachineID: "m1", jobs.AnnSystemUUID: "u1"},
			Finalizers: []string{jobs.FinalizerPVProtection}},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: size},
			AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimDelete,
			StorageClassName:              class,
			PersistentVolumeSource:        corev1.PersistentVolumeSource{Local: &corev1.LocalVolumeSource{Path: "/mnt/" + class + "/" + pvName}},
			NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
				MatchExpressions: []corev1.NodeSelectorRequirement{{Key: corev1.LabelHostname, Operator: corev1.NodeSelectorOpIn,
					Values: []string{"node-a"}}}}}}},
		},
	}
	pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: claim, Namespace: "default"},
		Spec: corev1.PersistentVolumeClaimSpec{AccessModes: pv.Spec.AccessModes, StorageClassName: &class, VolumeName: pvName,
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: size}}}}
	pvc, err := c.CoreV1().PersistentVolumeClaims("default").Create(t.Context(), pvc, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pv.Spec.ClaimRef = &corev1.ObjectReference{Kind: "PersistentVolumeClaim", Namespace: "default", Name: claim, UID: pvc.UID}
	if pv, err = c.CoreV1().PersistentVolumes().Create(t.Context(), pv, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pv.Status.Phase = corev1.VolumeBound
	if _, err := c.CoreV1().PersistentVolumes().UpdateStatus(t.Context(), pv, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// startNodeCleanup runs the release of claims on deleted nodes as the
// master's ServiceAccount, with its informers wired as the binary wires
// them, until the test ends.
func (e *env) startNodeCleanup(t *testing.T, clock *testingclock.FakeClock) {
	t.Helper()
	cfg, _, err := config.Parse(map[string]string{config.KeyStorageClassMap: releaseClasses})
	if err != nil {
		t.Fatal(err)
	}
	kube := kubernetes.NewForConfigOrDie(asMaster(e.cp.Config))
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	factory := informers.NewSharedInformerFactory(kube, 0)
	broadcaster := record.NewBroadcaster(record.WithContext(ctx))
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: kube.CoreV1().Events("")})
	recorder := broadcaster.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "local-volume-provisioner"})
	nc, err := nodecleanup.New(ctx, kube, factory.Core().V1().Nodes(), factory.Core().V1().PersistentVolumes(), recorder,
		nodecleanup.Options{Config: cfg, Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	factory.StartWithContext(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { nc.Run(ctx) })
	t.Cleanup(func() {
		cancel()
		wg.Wait()
		factory.Shutdown()
		broadcaster.Shutdown()
	})
}
