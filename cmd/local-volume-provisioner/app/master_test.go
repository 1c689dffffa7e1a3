package app

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes/fake"
	core "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2/ktesting"

	"github.com/nodeplug/nodeplug/cmd/local-volume-provisioner/app/options"
	"github.com/nodeplug/nodeplug/pkg/localpv/config"
	"github.com/nodeplug/nodeplug/pkg/localpv/controller"
	"github.com/nodeplug/nodeplug/pkg/localpv/naming"
	"github.com/nodeplug/nodeplug/pkg/localpv/unwiped/unwipedtest"
)

// TestRunControllerWiring starts the real informer wiring against fake
// clients and waits, boundedly, for the start-up discovery Job and for
// readiness. Under Warn the master never lists, watches or writes the
// admission policy.
func TestRunControllerWiring(t *testing.T) {
	for _, policy := range []string{controller.ReplacedMachineBlockPods, controller.ReplacedMachineWarn} {
		t.Run(policy, func(t *testing.T) {
			kube, h := startController(t, func(o *options.MasterOptions) { o.ReplacedMachinePolicy = policy })
			err := wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
				_, err := kube.BatchV1().Jobs("lpv").Get(ctx, naming.DiscoveryJobName("a"), metav1.GetOptions{})
				return err == nil, nil
			})
			if err != nil {
				t.Fatalf("no discovery Job for node a: %v", err)
			}
			if code, body := readyz(h); code != http.StatusOK {
				t.Errorf("/readyz %d %s after the caches synced", code, body)
			}
			usedPolicy := false
			for _, a := range kube.Actions() {
				usedPolicy = usedPolicy || a.GetResource().Resource == "validatingadmissionpolicies"
			}
			if want := policy == controller.ReplacedMachineBlockPods; usedPolicy != want {
				t.Errorf("master used the admission policy: %v, want %v", usedPolicy, want)
			}
		})
	}
}

// TestNotReadyWhileACacheCannotSync: a cache the master may not list keeps
// /readyz failing, with the resource and the verbs it needs, until the
// right is granted.
func TestNotReadyWhileACacheCannotSync(t *testing.T) {
	var allowed atomic.Bool
	kube, h := startController(t, func(o *options.MasterOptions) { o.CacheSyncTimeout = 100 * time.Millisecond },
		func(kube *fake.Clientset) {
			kube.PrependReactor("list", "validatingadmissionpolicies", func(core.Action) (bool, runtime.Object, error) {
				if allowed.Load() {
					return false, nil, nil
				}
				return true, nil, apierrors.NewForbidden(schema.GroupResource{Group: "admissionregistration.k8s.io",
					Resource: "validatingadmissionpolicies"}, "", errors.New("RBAC: access denied"))
			})
		})
	const want = "the master needs list/watch validatingadmissionpolicies.admissionregistration.k8s.io named " +
		"local-volume-provisioner-replaced-machine-claims"
	var code int
	var body string
	err := wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		code, body = readyz(h)
		return code == http.StatusServiceUnavailable && strings.Contains(body, want), nil
	})
	if err != nil {
		t.Fatalf("/readyz %d %q, want 503 with %q", code, body, want)
	}
	if !strings.Contains(body, "forbidden") {
		t.Errorf("/readyz %q does not say the list was forbidden", body)
	}
	if _, err := kube.BatchV1().Jobs("lpv").Get(t.Context(), naming.DiscoveryJobName("a"), metav1.GetOptions{}); err == nil {
		t.Error("the master worked before its caches synced")
	}
	allowed.Store(true)
	err = wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		code, body = readyz(h)
		return code == http.StatusOK, nil
	})
	if err != nil {
		t.Fatalf("/readyz %d %q after the right was granted, want 200", code, body)
	}
}

// startController runs runController on fake clients holding node a, with
// the options and the clientset changed by the given functions, until the
// test ends. It returns the clientset and the master's /readyz.
func startController(t *testing.T, opt func(*options.MasterOptions), kubeOpts ...func(*fake.Clientset)) (*fake.Clientset, http.Handler) {
	t.Helper()
	cfg, _, err := config.Parse(map[string]string{config.KeyStorageClassMap: "fast: {hostDir: /mnt/fast}"})
	if err != nil {
		t.Fatal(err)
	}
	node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "a", Labels: map[string]string{v1.LabelHostname: "a"}}}
	kube := fake.NewClientset(node)
	for _, f := range kubeOpts {
		f(kube)
	}
	dyn := unwipedtest.Client()
	o := options.NewMasterOptions()
	o.Namespace, o.Image = "lpv", "nodeplug/local-volume-provisioner:dev"
	opt(o)
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan error)
	ready := &readiness{}
	go func() { done <- runController(ctx, o, cfg, kube, dyn, record.NewFakeRecorder(100), ready) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("runController: %v", err)
		}
	})
	return kube, ready
}

func readyz(h http.Handler) (int, string) {
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/readyz", nil))
	return rec.Code, rec.Body.String()
}

func TestStripManagedFields(t *testing.T) {
	mf := []metav1.ManagedFieldsEntry{{Manager: "kubelet", Operation: metav1.ManagedFieldsOperationUpdate}}
	cases := map[string]struct {
		in   any
		want func(t *testing.T, out any)
	}{
		"node loses managedFields": {
			in: &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "a", ManagedFields: mf}},
			want: func(t *testing.T, out any) {
				if n := out.(*v1.Node); n.ManagedFields != nil || n.Name != "a" {
					t.Errorf("got %+v", n.ObjectMeta)
				}
			},
		},
		"tombstone passes through": {
			in: cache.DeletedFinalStateUnknown{Key: "a"},
			want: func(t *testing.T, out any) {
				if _, ok := out.(cache.DeletedFinalStateUnknown); !ok {
					t.Errorf("got %T", out)
				}
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			out, err := stripManagedFields(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			tc.want(t, out)
		})
	}
}
