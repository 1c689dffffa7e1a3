package unwiped

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/util/retry"
	"k8s.io/klog/v2"

	"github.com/nodeplug/localpv-api/localpv/v1alpha1"

	"github.com/nodeplug/nodeplug/pkg/localpv/metrics"
)

// LabelLegacyKey is set on an entry moved from the legacy ConfigMap: the
// entry's key there, which a held PV of that time carries. Forget of that
// key forgets the entry.
const LabelLegacyKey = v1alpha1.GroupName + "/legacy-key"

func (s *store) Forget(ctx context.Context, key string) error {
	found, err := s.forget(ctx, key)
	if err != nil || found || !strings.HasPrefix(key, "disk-") {
		return err
	}
	l, err := s.Disks.List(ctx, metav1.ListOptions{LabelSelector: labels.SelectorFromSet(labels.Set{LabelLegacyKey: key}).String()})
	if err != nil {
		return fmt.Errorf("failed to list the unwiped disk of legacy key %s: %w", key, err)
	}
	for _, u := range l.Items {
		if _, err := s.forget(ctx, u.GetName()); err != nil {
			return err
		}
	}
	return nil
}

// forget removes the finalizer of one entry, then deletes it. It reports
// whether the entry existed.
func (s *store) forget(ctx context.Context, name string) (bool, error) {
	found := false
	var u *unstructured.Unstructured
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var err error
		u, err = s.Disks.Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return err
		}
		found = true
		fins := u.GetFinalizers()
		if !slices.Contains(fins, v1alpha1.UnwipedDiskFinalizer) {
			return nil
		}
		u.SetFinalizers(slices.DeleteFunc(slices.Clone(fins), func(f string) bool { return f == v1alpha1.UnwipedDiskFinalizer }))
		_, err = s.Disks.Update(ctx, u, metav1.UpdateOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return err
	})
	if err != nil {
		return false, fmt.Errorf("failed to release UnwipedDisk %s: %w", name, err)
	}
	if !found {
		return false, nil
	}
	if err := s.Disks.Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return true, fmt.Errorf("failed to delete UnwipedDisk %s: %w", name, err)
	}
	if s.cache != nil {
		s.cache.mc.OnDelete(u)
	}
	s.mu.Lock()
	delete(s.deleting, name)
	s.mu.Unlock()
	klog.FromContext(ctx).V(2).Info("Forgot an unwiped disk", "unwipedDisk", name)
	return true, nil
}

func (s *store) Expire(ctx context.Context, retention time.Duration, gone func(node string) bool) ([]string, error) {
	if retention <= 0 {
		return nil, nil
	}
	all, err := s.Load(ctx)
	if err != nil {
		return nil, fmt.Errorf("failed to expire unwiped disks: %w", err)
	}
	var expired []string
	for _, k := range slices.Sorted(maps.Keys(all)) {
		d := all[k]
		since, err := time.Parse(sinceLayout, d.Since)
		if err != nil || s.Clock.Since(since) < retention || !gone(d.Node) {
			continue
		}
		if d.ID.Strong() {
			continue // matched on any node: a deleted node's disk may come back in another
		}
		if _, err := s.forget(ctx, k); err != nil {
			return expired, fmt.Errorf("failed to expire unwiped disks: %w", err)
		}
		expired = append(expired, k)
	}
	metrics.UnwipedExpired.Add(float64(len(expired)))
	return expired, nil
}
