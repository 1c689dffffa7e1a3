package localpv

import (
	"context"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/retry"
	"k8s.io/klog/v2/ktesting"

	"github.com/nodeplug/localpv-api/localpv/v1alpha1"
	"github.com/nodeplug/nodeplug/pkg/localpv/config"
	"github.com/nodeplug/nodeplug/pkg/localpv/controller"
	"github.com/nodeplug/nodeplug/pkg/localpv/identity"
	"github.com/nodeplug/nodeplug/pkg/localpv/jobs"
	"github.com/nodeplug/nodeplug/pkg/localpv/naming"
	"github.com/nodeplug/nodeplug/pkg/localpv/report"
	"github.com/nodeplug/nodeplug/pkg/localpv/unwiped"
)

const (
	// masterUser is the master's ServiceAccount from rbac-master.yaml; the
	// master runs with its rights only.
	masterUser = "system:serviceaccount:" + namespace + ":local-volume-provisioner-master"
	fastDir    = "/mnt/fast"
	classMap   = "fast:\n  hostDir: " + fastDir + "\n"
)

// newMasterEnv starts an apiserver with the namespace and the master's RBAC
// from the manifests, the "fast" StorageClass, and the simulator.
func newMasterEnv(t *testing.T) (*env, *kubeletSim) {
	t.Helper()
	return newMasterEnvWithSim(t, 1)
}

// newMasterEnvWithSim is newMasterEnv with simWorkers simulator workers.
func newMasterEnvWithSim(t testing.TB, simWorkers int) (*env, *kubeletSim) {
	t.Helper()
	e := newEnv(t, "namespace.yaml", "rbac-master.yaml")
	e.grantMasterRights(t, []string{"fast"}, false)
	policy := corev1.PersistentVolumeReclaimDelete
	sc := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "fast"}, Provisioner: "kubernetes.io/no-provisioner",
		ReclaimPolicy: &policy}
	if _, err := e.cp.Client.StorageV1().StorageClasses().Create(t.Context(), sc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return e, startSimWorkers(t, e.cp.Client, simWorkers)
}

// startMaster runs a master, with empty memory, as the master's
// ServiceAccount. Its informers are wired as cmd/local-volume-provisioner
// wires them. The returned stop function waits until it has stopped; it also
// runs when the test ends.
func (e *env) startMaster(t *testing.T, retryBase time.Duration) (stop func()) {
	t.Helper()
	stop, _ = e.startMasterWith(t, retryBase, controller.Options{})
	return stop
}

// startMasterWith is startMaster with the replaced-machine policy and the
// cache sync timeout of opts; it also returns the master. Under Warn, as
// in the binary, no admission policy informer is started.
func (e *env) startMasterWith(t *testing.T, retryBase time.Duration, opts controller.Options) (stop func(), c controller.Controller) {
	t.Helper()
	cfg, _, err := config.Parse(map[string]string{config.KeyStorageClassMap: classMap})
	if err != nil {
		t.Fatal(err)
	}
	rc := asMaster(e.cp.Config)
	kube := kubernetes.NewForConfigOrDie(rc)
	dyn := dynamic.NewForConfigOrDie(rc)
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)

	cluster := informers.NewSharedInformerFactory(kube, 0)
	own := informers.NewSharedInformerFactoryWithOptions(kube, 0, informers.WithNamespace(namespace),
		informers.WithTweakListOptions(func(lo *metav1.ListOptions) { lo.LabelSelector = jobs.LabelManagedBy + "=" + jobs.ManagedByValue }))
	notif := dynamicinformer.NewDynamicSharedInformerFactory(dyn, 0)
	// As the binary does: the master may list and watch its policy by name only.
	policy := informers.NewSharedInformerFactoryWithOptions(kube, 0, informers.WithTweakListOptions(func(lo *metav1.ListOptions) {
		lo.FieldSelector = fields.OneTermEqualSelector("metadata.name", controller.ReplacedMachineAdmissionPolicy).String()
	}))
	broadcaster := record.NewBroadcaster(record.WithContext(ctx))
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: kube.CoreV1().Events("")})
	recorder := broadcaster.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "local-volume-provisioner"})
	inf := controller.Informers{
		Nodes: cluster.Core().V1().Nodes(), PVs: cluster.Core().V1().PersistentVolumes(),
		StorageClasses: cluster.Storage().V1().StorageClasses(), Jobs: own.Batch().V1().Jobs(), Pods: own.Core().V1().Pods(),
		Notifications: notif.ForResource(v1alpha1.SchemeGroupVersionResource).Informer(),
	}
	if opts.ReplacedMachinePolicy != controller.ReplacedMachineWarn {
		inf.AdmissionPolicies = policy.Admissionregistration().V1().ValidatingAdmissionPolicies()
	}
	c, err = controller.New(ctx, kube, inf, recorder, controller.Options{
		ReplacedMachinePolicy: opts.ReplacedMachinePolicy, CacheSyncTimeout: opts.CacheSyncTimeout,
		Config: cfg, ProvisionerName: "nodeplug.io/local-volume-provisioner", DiscoveryQPS: 100, DiscoveryBurst: 100,
		RetryBase: retryBase, RetryMax: 2 * retryBase, Notifications: dyn.Resource(v1alpha1.SchemeGroupVersionResource),
		Unwiped: unwiped.New(unwiped.Options{Disks: dyn.Resource(v1alpha1.UnwipedDiskGroupVersionResource), Kube: kube,
			Namespace: namespace, Provisioner: "nodeplug.io/local-volume-provisioner"}),
		Jobs: jobs.Params{Namespace: namespace, Image: "nodeplug/local-volume-provisioner:dev", ImagePullPolicy: corev1.PullIfNotPresent,
			DiscoveryShards: 2, DiscoveryTTL: 300, DiscoveryDeadline: 300},
	})
	if err != nil {
		t.Fatal(err)
	}
	cluster.StartWithContext(ctx)
	own.StartWithContext(ctx)
	policy.StartWithContext(ctx)
	notif.Start(ctx.Done()) // the dynamic informer factory has no StartWithContext
	done := make(chan struct{})
	go func() {
		defer close(done)
		c.Run(ctx, 2)
	}()
	stop = sync.OnceFunc(func() {
		cancel()
		<-done
		cluster.Shutdown()
		own.Shutdown()
		policy.Shutdown()
		notif.Shutdown()
		broadcaster.Shutdown()
	})
	t.Cleanup(stop)
	return stop, c
}

// asMaster returns a copy of cfg that acts as the master's ServiceAccount.
func asMaster(cfg *rest.Config) *rest.Config {
	rc := rest.CopyConfig(cfg)
	rc.Impersonate = rest.ImpersonationConfig{UserName: masterUser,
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + namespace, "system:authenticated"}}
	return rc
}

func (e *env) createNode(t *testing.T, name string) {
	t.Helper()
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{corev1.LabelHostname: name}}}
	if _, err := e.cp.Client.CoreV1().Nodes().Create(t.Context(), n, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func disks(node string, names ...string) *report.Report {
	c := report.Class{Name: "fast"}
	for _, n := range names {
		c.Volumes = append(c.Volumes, report.Volume{Name: n, Kind: report.KindDirectory, Capacity: 20<<30 + 4321,
			ID: identity.LocalFileHandle(0, 1, 1, []byte(node+"/"+n))})
	}
	return &report.Report{Version: report.Version, Node: node, Classes: []report.Class{c}}
}

func pvName(node, entry string) string { return naming.PVName(node, fastDir+"/"+entry) }

func cleanupJobName(node, entry string, attempt int) string {
	return naming.CleanupJobName(naming.VolumeID(node, fastDir+"/"+entry), attempt)
}

// waitForPV waits until the PV exists with a UID other than not, and
// returns it.
func (e *env) waitForPV(t *testing.T, name string, not types.UID) *corev1.PersistentVolume {
	t.Helper()
	var pv *corev1.PersistentVolume
	poll(t, "PV "+name, func(ctx context.Context) (bool, error) {
		var err error
		pv, err = e.cp.Client.CoreV1().PersistentVolumes().Get(ctx, name, metav1.GetOptions{})
		return err == nil && pv.UID != not, client404(err)
	})
	return pv
}

// waitForGone waits until get reports NotFound, or an object other than uid.
func waitForGone(t *testing.T, what string, uid types.UID, get func(context.Context) (metav1.Object, error)) {
	t.Helper()
	poll(t, what+" gone", func(ctx context.Context) (bool, error) {
		o, err := get(ctx)
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return err == nil && o.GetUID() != uid, err
	})
}

func (e *env) pvGetter(name string) func(context.Context) (metav1.Object, error) {
	return func(ctx context.Context) (metav1.Object, error) {
		return e.cp.Client.CoreV1().PersistentVolumes().Get(ctx, name, metav1.GetOptions{})
	}
}

func (e *env) jobGetter(name string) func(context.Context) (metav1.Object, error) {
	return func(ctx context.Context) (metav1.Object, error) {
		return e.cp.Client.BatchV1().Jobs(namespace).Get(ctx, name, metav1.GetOptions{})
	}
}

func (e *env) pvExists(t *testing.T, name string) bool {
	t.Helper()
	_, err := e.cp.Client.CoreV1().PersistentVolumes().Get(t.Context(), name, metav1.GetOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	return err == nil
}

// releasePV does what the PV controller does when a claim is deleted: the
// PV keeps its claimRef and becomes Released.
func (e *env) releasePV(t *testing.T, name string) {
	t.Helper()
	e.setClaim(t, name, "claim", corev1.VolumeReleased)
}

// setClaim sets the PV's claimRef to the claim in default and its phase,
// retrying on conflicts, as the PV controller would.
func (e *env) setClaim(t *testing.T, name, claim string, phase corev1.PersistentVolumePhase) {
	t.Helper()
	pvs := e.cp.Client.CoreV1().PersistentVolumes()
	uid := e.claimUID(t, claim)
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		pv, err := pvs.Get(t.Context(), name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		pv.Spec.ClaimRef = &corev1.ObjectReference{Kind: "PersistentVolumeClaim", Namespace: "default", Name: claim, UID: uid}
		if pv, err = pvs.Update(t.Context(), pv, metav1.UpdateOptions{}); err != nil {
			return err
		}
		pv.Status.Phase = phase
		_, err = pvs.UpdateStatus(t.Context(), pv, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatalf("setting PV %s to %s by claim %s: %v", name, phase, claim, err)
	}
}

// claimUID returns the UID of claim in default, creating it if needed (no
// PV controller runs here: it stays Pending).
func (e *env) claimUID(t *testing.T, claim string) types.UID {
	t.Helper()
	pvcs := e.cp.Client.CoreV1().PersistentVolumeClaims("default")
	if pvc, err := pvcs.Get(t.Context(), claim, metav1.GetOptions{}); err == nil {
		return pvc.UID
	}
	pvc, err := pvcs.Create(t.Context(), &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: claim},
		Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}},
		metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating claim %s: %v", claim, err)
	}
	return pvc.UID
}

func client404(err error) error {
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}
