package controller

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// DefaultCacheSyncTimeout is how long the master waits for an informer
// cache before it reports it, and itself as not ready.
const DefaultCacheSyncTimeout = 2 * time.Minute

// cacheSyncPeriod is how often the caches are checked while they sync.
const cacheSyncPeriod = 100 * time.Millisecond

// informerCache is one informer the master waits for, named by what it lists
// and watches ("jobs.batch in namespace x").
type informerCache struct {
	resource string
	inf      cache.SharedIndexInformer
}

// cacheSync waits for the master's informer caches. A cache that has not
// synced after the timeout is logged once, with the resource and the verbs
// the master needs on it, and keeps the master not ready; its reflector
// keeps retrying, and the master becomes ready when it syncs.
type cacheSync struct {
	caches  []informerCache
	timeout time.Duration
	clock   clock.WithTicker

	mu       sync.Mutex
	start    time.Time
	pending  []string
	late     bool
	reported map[string]bool
	lastErr  map[string]error
}

func newCacheSync(caches []informerCache, timeout time.Duration, clk clock.WithTicker) *cacheSync {
	s := &cacheSync{caches: caches, timeout: timeout, clock: clk, reported: map[string]bool{}, lastErr: map[string]error{}}
	for _, c := range caches {
		s.pending = append(s.pending, c.resource)
		// Keep the reflector's last list/watch error for the report. An
		// informer that has already started keeps its handler and the
		// report has no error.
		_ = c.inf.SetWatchErrorHandlerWithContext(func(ctx context.Context, r *cache.Reflector, err error) {
			cache.DefaultWatchErrorHandler(ctx, r, err)
			s.mu.Lock()
			s.lastErr[c.resource] = err
			s.mu.Unlock()
		})
	}
	return s
}

// wait checks the caches until all have synced (true) or ctx ends (false).
func (s *cacheSync) wait(ctx context.Context) bool {
	logger := klog.FromContext(ctx)
	s.mu.Lock()
	s.start = s.clock.Now()
	s.mu.Unlock()
	logger.Info("Waiting for informer caches to sync", "timeout", s.timeout)
	t := s.clock.NewTicker(cacheSyncPeriod)
	defer t.Stop()
	for !s.check(logger) {
		select {
		case <-ctx.Done():
			return false
		case <-t.C():
		}
	}
	logger.Info("Informer caches synced")
	return true
}

// check looks at every cache once and reports whether all have synced.
// After the timeout it logs each cache still not synced, once.
func (s *cacheSync) check(logger klog.Logger) bool {
	var pending []string
	for _, c := range s.caches {
		if !c.inf.HasSynced() {
			pending = append(pending, c.resource)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pending = pending
	waited := s.clock.Since(s.start)
	s.late = len(pending) > 0 && waited >= s.timeout
	if !s.late {
		return len(pending) == 0
	}
	for _, r := range pending {
		if !s.reported[r] {
			s.reported[r] = true
			logger.Error(s.cacheError(r), "Informer cache not synced, the master is not ready until it is", "resource", r, "waited", waited)
		}
	}
	return false
}

// cacheError says what the master needs on a cache's resource. The caller
// holds s.mu.
func (s *cacheSync) cacheError(resource string) error {
	last := s.lastErr[resource]
	if last == nil {
		last = errors.New("no list or watch error seen: check the master's connection to the apiserver")
	}
	return fmt.Errorf("cache of %s not synced after %v; the master needs list/watch %s: %w", resource, s.timeout, resource, last)
}

// ready returns nil once every cache has synced; before, an error naming
// the caches still syncing and, after the timeout, what the master needs.
func (s *cacheSync) ready() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case len(s.pending) == 0:
		return nil
	case !s.late:
		return fmt.Errorf("informer caches syncing: %s", strings.Join(s.pending, ", "))
	}
	errs := make([]error, 0, len(s.pending))
	for _, r := range s.pending {
		errs = append(errs, s.cacheError(r))
	}
	return errors.Join(errs...)
}
