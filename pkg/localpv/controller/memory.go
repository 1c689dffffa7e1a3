package controller

import (
	"context"
	"fmt"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/klog/v2"
)

// memoryCheckInterval is how long a check of the memory of unwiped disks
// stands before the next sync reads it again.
const memoryCheckInterval = 10 * time.Second

// memoryGate fails the master closed while the memory of unwiped disks
// cannot be read, is missing or does not parse: a sync then does nothing
// (publishing and dropping PVs both depend on the memory), the error is
// logged with each refused sync and Ready reports it on /readyz.
type memoryGate struct {
	mu      sync.Mutex
	checked time.Time
	err     error
}

// checkMemory returns the memory's state, read again when the last check
// is older than memoryCheckInterval or failed.
func (c *controller) checkMemory(ctx context.Context) error {
	g := &c.memory
	g.mu.Lock()
	defer g.mu.Unlock()
	now := c.clock.Now()
	if g.err == nil && !g.checked.IsZero() && now.Sub(g.checked) < memoryCheckInterval {
		return nil
	}
	err := c.unwiped.Check(ctx)
	if err != nil {
		err = fmt.Errorf("the master publishes, wipes and drops nothing until the memory of unwiped disks can be read: %w", err)
		if g.err == nil {
			klog.FromContext(ctx).Error(err, "Failing closed")
		}
	} else if g.err != nil {
		klog.FromContext(ctx).Info("The memory of unwiped disks can be read again")
	}
	g.checked, g.err = now, err
	return err
}

// memoryErr is the last check's error, for Ready.
func (c *controller) memoryErr() error {
	c.memory.mu.Lock()
	defer c.memory.mu.Unlock()
	return c.memory.err
}

// expireUnwiped forgets the remembered disks of nodes that left the
// cluster (no Node, no NodeDiskState) longer than Options.UnwipedRetention
// ago.
func (c *controller) expireUnwiped(ctx context.Context) {
	if c.opts.UnwipedRetention <= 0 {
		return
	}
	gone := func(node string) bool {
		if _, err := c.nodeLister.Get(node); !apierrors.IsNotFound(err) {
			return false
		}
		_, exists, err := c.notifications.GetByKey(node)
		return err == nil && !exists
	}
	expired, err := c.unwiped.Expire(ctx, c.opts.UnwipedRetention, gone)
	if err != nil {
		klog.FromContext(ctx).Error(err, "Failed to expire unwiped disks")
		return
	}
	if len(expired) > 0 {
		klog.FromContext(ctx).Info("Forgot unwiped disks of nodes that left the cluster", "keys", expired,
			"retention", c.opts.UnwipedRetention)
	}
}
