package jobs

import (
	"fmt"

	batchv1 "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
)

// JobPods finds the pods of a Job in the master's cache.
type JobPods interface {
	Of(job *batchv1.Job) ([]*v1.Pod, error)
}

// IndexJobPods indexes pods by the namespace and name of their Job (the
// Job controller's job-name label).
const IndexJobPods = "jobPods"

// PodIndexers are the indexers PodsByIndex reads; add them to the pod
// informer before it starts.
var PodIndexers = cache.Indexers{IndexJobPods: func(obj interface{}) ([]string, error) {
	if p, ok := obj.(*v1.Pod); ok && p.Labels[batchv1.JobNameLabel] != "" {
		return []string{p.Namespace + "/" + p.Labels[batchv1.JobNameLabel]}, nil
	}
	return nil, nil
}}

// PodsByIndex finds a Job's pods through PodIndexers: a lookup costs the
// Job's pods, not every pod of the namespace (each running Job's).
func PodsByIndex(idx cache.Indexer) JobPods { return podIndex{idx} }

type podIndex struct{ idx cache.Indexer }

func (p podIndex) Of(job *batchv1.Job) ([]*v1.Pod, error) {
	objs, err := p.idx.ByIndex(IndexJobPods, job.Namespace+"/"+job.Name)
	if err != nil {
		return nil, fmt.Errorf("failed to look up the pods of Job %s/%s: %w", job.Namespace, job.Name, err)
	}
	out := make([]*v1.Pod, 0, len(objs))
	for _, o := range objs {
		out = append(out, o.(*v1.Pod))
	}
	return out, nil
}

// PodsByLabel finds a Job's pods by listing its namespace with its
// job-name label (tests, and caches without PodIndexers).
func PodsByLabel(l corelisters.PodLister) JobPods { return podLabel{l} }

type podLabel struct{ l corelisters.PodLister }

func (p podLabel) Of(job *batchv1.Job) ([]*v1.Pod, error) {
	return p.l.Pods(job.Namespace).List(labels.SelectorFromSet(labels.Set{batchv1.JobNameLabel: job.Name}))
}
