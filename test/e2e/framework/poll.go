package framework

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// PollInterval is how often Poll checks its condition unless told
// otherwise (PollEvery).
const PollInterval = 250 * time.Millisecond

// PollOption changes how Poll polls.
type PollOption func(*pollOptions)

type pollOptions struct {
	interval time.Duration
}

// PollEvery makes Poll check its condition every d instead of every
// PollInterval.
func PollEvery(d time.Duration) PollOption {
	return func(o *pollOptions) { o.interval = d }
}

// Poll checks cond at once and then every PollInterval until cond returns
// true (Poll returns nil), timeout has passed since the call or ctx ends
// (Poll returns the context's error). A timeout of 0 polls until ctx
// ends. cond gets a context that ends when the poll does, for the calls
// it makes; it may fail the test itself. A negative timeout or an interval
// that is not positive is an error, and cond is not called.
func Poll(ctx context.Context, timeout time.Duration, cond func(ctx context.Context) bool, opts ...PollOption) error {
	o := pollOptions{interval: PollInterval}
	for _, opt := range opts {
		opt(&o)
	}
	if timeout < 0 {
		return fmt.Errorf("poll: negative timeout %v", timeout)
	}
	if o.interval <= 0 {
		return fmt.Errorf("poll: interval %v, want one above zero", o.interval)
	}
	check := func(ctx context.Context) (bool, error) { return cond(ctx), nil }
	if timeout == 0 {
		return wait.PollUntilContextCancel(ctx, o.interval, true, check)
	}
	return wait.PollUntilContextTimeout(ctx, o.interval, timeout, true, check)
}
