package nodecleanup

import (
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2/ktesting"
)

func TestPodNames(t *testing.T) {
	owner := func(kind, apiVersion, name string) metav1.OwnerReference {
		return metav1.OwnerReference{Kind: kind, APIVersion: apiVersion, Name: name}
	}
	tests := []struct {
		name   string
		claim  string
		owners []metav1.OwnerReference
		want   []string
	}{
		{name: "statefulset claim", claim: "data-web-0", want: []string{"web-0"}},
		{name: "dashes in template and set", claim: "my-data-my-web-12", want: []string{"data-my-web-12", "my-web-12", "web-12"}},
		{name: "statefulset owner first", claim: "my-data-my-web-3", owners: []metav1.OwnerReference{owner("StatefulSet", "apps/v1", "my-web")},
			want: []string{"my-web-3", "data-my-web-3", "web-3"}},
		{name: "owner of another name ignored", claim: "data-web-0", owners: []metav1.OwnerReference{owner("StatefulSet", "apps/v1", "db")},
			want: []string{"web-0"}},
		{name: "ephemeral volume owner pod", claim: "runner-x7k2p-scratch", owners: []metav1.OwnerReference{owner("Pod", "v1", "runner-x7k2p")},
			want: []string{"runner-x7k2p"}},
		{name: "pod-like owner of another group ignored", claim: "cache", owners: []metav1.OwnerReference{owner("Pod", "example.com/v1", "p")}},
		{name: "no ordinal", claim: "data-web", want: nil},
		{name: "ordinal only", claim: "-0", want: nil},
		{name: "no dash", claim: "data0", want: nil},
		{name: "bounded", claim: "a-b-c-d-e-f-g-h-i-j-k-0", want: []string{"b-c-d-e-f-g-h-i-j-k-0", "c-d-e-f-g-h-i-j-k-0",
			"d-e-f-g-h-i-j-k-0", "e-f-g-h-i-j-k-0", "f-g-h-i-j-k-0", "g-h-i-j-k-0", "h-i-j-k-0", "i-j-k-0"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := &v1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: tc.claim, OwnerReferences: tc.owners}}
			if got := podNames(c); !slices.Equal(got, tc.want) {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

// TestPodsOfClaim: a guessed pod counts only if it uses the claim.
func TestPodsOfClaim(t *testing.T) {
	ephemeral := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "runner", Namespace: ns}, Spec: v1.PodSpec{Volumes: []v1.Volume{
		{Name: "scratch", VolumeSource: v1.VolumeSource{Ephemeral: &v1.EphemeralVolumeSource{}}}}}}
	f := newFixture(t, classes, pod("web-0", "data-web-0"), pod("db-0", "other"), ephemeral,
		&v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-0", Namespace: "elsewhere"}})
	tests := []struct {
		name  string
		claim *v1.PersistentVolumeClaim
		want  []string
	}{
		{name: "statefulset pod", claim: claim("data-web-0", ""), want: []string{"web-0"}},
		{name: "pod of that name uses another claim", claim: claim("data-db-0", "")},
		{name: "no pod of that name", claim: claim("data-web-7", "")},
		{name: "generic ephemeral volume", claim: func() *v1.PersistentVolumeClaim {
			c := claim("runner-scratch", "")
			c.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: "runner"}}
			return c
		}(), want: []string{"runner"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			var got []string
			for _, p := range f.c.podsOfClaim(ctx, tc.claim) {
				got = append(got, p.Namespace+"/"+p.Name)
			}
			var want []string
			for _, w := range tc.want {
				want = append(want, ns+"/"+w)
			}
			if !slices.Equal(got, want) {
				t.Errorf("got %q, want %q", got, want)
			}
		})
	}
	for _, a := range f.kube.Actions() {
		if a.GetResource().Resource == "pods" && a.GetVerb() != "get" {
			t.Errorf("pods %s: only get is allowed", a.GetVerb())
		}
	}
}
