package localpv

import (
	"context"
	"slices"
	"strings"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/nodeplug/localpv-api/localpv/v1alpha1"
)

const (
	watcherSA  = "local-volume-provisioner-watcher"
	nodeClaim  = "authentication.kubernetes.io/node-name"
	policyDeny = "may only write the NodeDiskState named node-a"
)

// TestWatcherTokenWritesOnlyItsNode applies the shipped admission policy and
// the watcher's RBAC, and uses real ServiceAccount tokens: one bound to a
// watcher pod on node-a, which therefore carries node-a in its node-name
// claim, may write node-a's NodeDiskState and nothing else; one bound to no
// pod may write none.
func TestWatcherTokenWritesOnlyItsNode(t *testing.T) {
	e := newEnv(t, "namespace.yaml", "rbac-watcher.yaml", "admission-policy.yaml")
	e.createNode(t, "node-a")
	e.createNode(t, "node-b")
	pod := e.createWatcherPod(t, "node-a")
	bound := e.watcherClient(t, &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: pod.Name, UID: pod.UID})
	unbound := e.watcherClient(t, nil)

	review, err := kubernetes.NewForConfigOrDie(bound.config).AuthenticationV1().SelfSubjectReviews().
		Create(t.Context(), &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := review.Status.UserInfo.Extra[nodeClaim]; !slices.Equal(got, []string{"node-a"}) {
		t.Fatalf("token bound to a pod on node-a carries %s=%v", nodeClaim, got)
	}
	states := e.dyn.Resource(v1alpha1.SchemeGroupVersionResource)
	// The policy takes effect asynchronously; dry runs go through admission
	// without writing anything.
	poll(t, "admission policy in force", func(ctx context.Context) (bool, error) {
		_, err := bound.states.Create(ctx, diskState("node-b"), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return err != nil && strings.Contains(err.Error(), policyDeny), nil
	})
	if _, err := states.Create(t.Context(), diskState("node-b"), metav1.CreateOptions{}); err != nil {
		t.Fatalf("admin creating node-b's object: %v", err)
	}

	tests := []struct {
		name    string
		client  *watcherClient
		node    string
		update  bool
		wantErr string
	}{
		{name: "node-a's watcher creates node-a's object", client: bound, node: "node-a"},
		{name: "node-a's watcher updates node-a's object", client: bound, node: "node-a", update: true},
		{name: "node-a's watcher is denied creating another node's object", client: bound, node: "node-c", wantErr: "may only write the NodeDiskState named node-a"},
		{name: "node-a's watcher is denied updating node-b's object", client: bound, node: "node-b", update: true, wantErr: policyDeny},
		{name: "a token bound to no pod is denied", client: unbound, node: "node-b", update: true, wantErr: "not bound to a node"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			u := diskState(tc.node)
			var err error
			if tc.update {
				old, gerr := tc.client.states.Get(t.Context(), tc.node, metav1.GetOptions{})
				if gerr != nil {
					t.Fatalf("get: %v", gerr)
				}
				u.SetResourceVersion(old.GetResourceVersion())
				_, err = tc.client.states.Update(t.Context(), u, metav1.UpdateOptions{})
			} else {
				_, err = tc.client.states.Create(t.Context(), u, metav1.CreateOptions{})
			}
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("want allowed, got %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("want denied with %q, got %v", tc.wantErr, err)
			case tc.wantErr != "" && !apierrors.IsForbidden(err) && !apierrors.IsInvalid(err):
				t.Fatalf("want a Forbidden or Invalid status, got %v", err)
			}
		})
	}
}

type watcherClient struct {
	config *rest.Config
	states dynamic.ResourceInterface
}

// createWatcherPod creates a pod of the watcher's ServiceAccount already
// scheduled to node: what a DaemonSet pod is to the token API.
func (e *env) createWatcherPod(t *testing.T, node string) *corev1.Pod {
	t.Helper()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "watcher-" + node, Namespace: namespace},
		Spec: corev1.PodSpec{ServiceAccountName: watcherSA, NodeName: node, AutomountServiceAccountToken: ptr.To(false),
			Containers: []corev1.Container{{Name: "watcher", Image: "nodeplug/local-volume-provisioner:dev"}}}}
	pod, err := e.cp.Client.CoreV1().Pods(namespace).Create(t.Context(), pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return pod
}

// watcherClient returns a client that authenticates with a fresh token of
// the watcher's ServiceAccount, bound to ref when not nil.
func (e *env) watcherClient(t *testing.T, ref *authenticationv1.BoundObjectReference) *watcherClient {
	t.Helper()
	tr, err := e.cp.Client.CoreV1().ServiceAccounts(namespace).CreateToken(t.Context(), watcherSA,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{BoundObjectRef: ref, ExpirationSeconds: ptr.To[int64](3600)}},
		metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("token request: %v", err)
	}
	cfg := rest.AnonymousClientConfig(e.cp.Config)
	cfg.BearerToken = tr.Status.Token
	return &watcherClient{config: cfg, states: dynamic.NewForConfigOrDie(cfg).Resource(v1alpha1.SchemeGroupVersionResource)}
}
