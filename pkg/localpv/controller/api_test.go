package controller

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	fakediscovery "k8s.io/client-go/discovery/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/klog/v2/ktesting"

	"github.com/nodeplug/localpv-api/localpv/v1alpha1"
)

func TestCheckNodeDiskStateAPI(t *testing.T) {
	served := &metav1.APIResourceList{GroupVersion: v1alpha1.SchemeGroupVersion.String(),
		APIResources: []metav1.APIResource{{Name: v1alpha1.Resource, Kind: v1alpha1.Kind}}}
	otherResource := &metav1.APIResourceList{GroupVersion: v1alpha1.SchemeGroupVersion.String(),
		APIResources: []metav1.APIResource{{Name: "othercrds", Kind: "OtherCRD"}}}
	tests := []struct {
		name      string
		resources []*metav1.APIResourceList
		fail      error
		wantErr   string
		// wantMissing is whether the error wraps ErrNodeDiskStateAPIMissing.
		wantMissing bool
	}{
		{name: "served", resources: []*metav1.APIResourceList{served}},
		{name: "group not served", wantMissing: true,
			wantErr: "the apiserver does not serve localpv.nodeplug.io/v1alpha1 nodediskstates: the CustomResourceDefinition nodediskstates.localpv.nodeplug.io is not installed; apply deploy/local-volume-provisioner/crd.yaml"},
		{name: "another resource of the group", resources: []*metav1.APIResourceList{otherResource}, wantMissing: true,
			wantErr: "nodediskstates.localpv.nodeplug.io is not installed"},
		{name: "discovery fails", fail: errors.New("connection refused"),
			wantErr: "failed to discover the resources of localpv.nodeplug.io/v1alpha1: connection refused"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			err := CheckNodeDiskStateAPI(ctx, fakeDiscovery(tc.resources, tc.fail))
			checkAPIError(t, err, tc.wantErr, tc.wantMissing)
		})
	}
}

func TestWaitForNodeDiskStateAPI(t *testing.T) {
	tests := []struct {
		name string
		// appearAfter is the number of checks before the API is served; -1
		// never.
		appearAfter int
		wantErr     string
	}{
		{name: "served at once", appearAfter: 0},
		{name: "established while waiting", appearAfter: 3},
		{name: "never installed", appearAfter: -1,
			wantErr: "gave up after 200ms: the apiserver does not serve localpv.nodeplug.io/v1alpha1 nodediskstates: the CustomResourceDefinition nodediskstates.localpv.nodeplug.io is not installed; apply deploy/local-volume-provisioner/crd.yaml (kubectl apply -f deploy/local-volume-provisioner/crd.yaml"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			disco := fakeDiscovery(nil, nil)
			checks := 0
			disco.PrependReactor("get", "resource", func(clienttesting.Action) (bool, runtime.Object, error) {
				if checks++; tc.appearAfter >= 0 && checks > tc.appearAfter {
					disco.Resources = []*metav1.APIResourceList{{GroupVersion: v1alpha1.SchemeGroupVersion.String(),
						APIResources: []metav1.APIResource{{Name: v1alpha1.Resource}}}}
				}
				return false, nil, nil
			})
			start := time.Now()
			err := WaitForNodeDiskStateAPI(ctx, disco, 10*time.Millisecond, 200*time.Millisecond)
			checkAPIError(t, err, tc.wantErr, tc.wantErr != "")
			if took := time.Since(start); took > 5*time.Second {
				t.Errorf("took %s", took)
			}
		})
	}
	t.Run("cancelled", func(t *testing.T) {
		_, ctx := ktesting.NewTestContext(t)
		ctx, cancel := context.WithCancel(ctx)
		cancel()
		if err := WaitForNodeDiskStateAPI(ctx, fakeDiscovery(nil, nil), time.Millisecond, time.Minute); !errors.Is(err, context.Canceled) {
			t.Errorf("error %v, want context.Canceled", err)
		}
	})
}

func checkAPIError(t *testing.T, err error, wantErr string, wantMissing bool) {
	t.Helper()
	switch {
	case wantErr == "" && err != nil:
		t.Errorf("unexpected error: %v", err)
	case wantErr != "" && (err == nil || !strings.Contains(err.Error(), wantErr)):
		t.Errorf("error %v, want %q", err, wantErr)
	case errors.Is(err, ErrNodeDiskStateAPIMissing) != wantMissing:
		t.Errorf("errors.Is(%v, ErrNodeDiskStateAPIMissing) = %v, want %v", err, !wantMissing, wantMissing)
	}
}

func fakeDiscovery(resources []*metav1.APIResourceList, fail error) *fakediscovery.FakeDiscovery {
	d := &fakediscovery.FakeDiscovery{Fake: &clienttesting.Fake{Resources: resources}}
	if fail != nil {
		d.PrependReactor("get", "resource", func(clienttesting.Action) (bool, runtime.Object, error) { return true, nil, fail })
	}
	return d
}
