package flexadapter

import (
	"context"
	"slices"
	"sync"

	"k8s.io/klog/v2"

	"github.com/nodeplug/nodeplug/pkg/flexvolume/prober"
)

// maxPendingEvents bounds the events kept while no sink is set.
const maxPendingEvents = 64

// eventBuffer passes discovery events to a sink that may be set only after
// the first events happened: the prober's initial scan runs inside
// NewSource, before the kubelet or controller-manager has an event
// recorder. Since the prober reports each change once, events that arrive
// without a sink are kept (at most maxPendingEvents) and replayed, in order,
// when the sink is set. When the buffer is full, Normal events make way for
// Warnings: a Warning is evicted only when only Warnings remain.
type eventBuffer struct {
	// mu also serialises delivery, so that replayed events reach the sink
	// before any later one. Sinks must not block for long (prober.EventSink).
	mu      sync.Mutex
	sink    prober.EventSink
	pending []prober.Event
	dropped int
}

// event delivers ev, or keeps it until a sink is set.
func (b *eventBuffer) event(ctx context.Context, ev prober.Event) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.sink != nil {
		b.sink.Event(ctx, ev)
		return
	}
	if len(b.pending) < maxPendingEvents {
		b.pending = append(b.pending, ev)
		return
	}
	b.dropped++
	victim := -1
	for i, p := range b.pending {
		if p.Type != prober.EventTypeWarning {
			victim = i
			break
		}
	}
	switch {
	case victim >= 0:
	case ev.Type != prober.EventTypeWarning:
		return // only Warnings are kept: drop the new Normal event
	default:
		victim = 0
	}
	b.pending = append(slices.Delete(b.pending, victim, victim+1), ev)
}

// setSink sets the sink and replays the pending events to it. A nil sink
// makes later events wait for the next one.
func (b *eventBuffer) setSink(ctx context.Context, s prober.EventSink) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.sink = s
	if s == nil {
		return
	}
	if b.dropped > 0 {
		klog.FromContext(ctx).Info("Flexvolume discovery events from before event recording started were dropped; they are in the log",
			"dropped", b.dropped, "replayed", len(b.pending))
	}
	for _, ev := range b.pending {
		s.Event(ctx, ev)
	}
	b.pending, b.dropped = nil, 0
}
