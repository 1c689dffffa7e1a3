package jobs

import (
	"slices"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
)

// TestPodsByIndex (issue 37 item 2): a Job's pods are found through the
// index by its namespace and name, the same pods the label selector finds,
// without reading the other Jobs' pods of the namespace.
func TestPodsByIndex(t *testing.T) {
	idx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, PodIndexers)
	pod := func(ns, name, job string) *v1.Pod {
		p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
		if job != "" {
			p.Labels = map[string]string{batchv1.JobNameLabel: job}
		}
		return p
	}
	for _, p := range []*v1.Pod{pod("lpv", "a-1", "a"), pod("lpv", "a-2", "a"), pod("lpv", "b-1", "b"),
		pod("other", "a-1", "a"), pod("lpv", "loose", "")} {
		if err := idx.Add(p); err != nil {
			t.Fatal(err)
		}
	}
	names := func(pods []*v1.Pod) []string {
		var out []string
		for _, p := range pods {
			out = append(out, p.Namespace+"/"+p.Name)
		}
		slices.Sort(out)
		return out
	}
	for _, tc := range []struct {
		name string
		job  *batchv1.Job
		want []string
	}{
		{name: "two pods", job: &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: "lpv", Name: "a"}}, want: []string{"lpv/a-1", "lpv/a-2"}},
		{name: "another namespace", job: &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: "other", Name: "a"}}, want: []string{"other/a-1"}},
		{name: "none", job: &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: "lpv", Name: "c"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			byIndex, err := PodsByIndex(idx).Of(tc.job)
			if err != nil {
				t.Fatal(err)
			}
			byLabel, err := PodsByLabel(corelisters.NewPodLister(idx)).Of(tc.job)
			if err != nil {
				t.Fatal(err)
			}
			if got := names(byIndex); !slices.Equal(got, tc.want) || !slices.Equal(got, names(byLabel)) {
				t.Errorf("by index %v, by label %v, want %v", got, names(byLabel), tc.want)
			}
		})
	}
}
