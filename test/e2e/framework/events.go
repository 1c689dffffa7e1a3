package framework

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"
)

// EventQuery says which Events a test waits for (WaitForEvent). A field
// left empty matches every Event.
type EventQuery struct {
	// Namespace is the Events' namespace; "" is every namespace.
	Namespace string
	// Kind and Name are those of the Event's involved object.
	Kind, Name string
	// Reason is the Event's reason, Type its type (Normal or Warning).
	Reason, Type string
	// MessageContains is a part of the Event's message.
	MessageContains string
	// Since is the earliest time the Event was last seen, to the second
	// (Events carry seconds): the last observation of its series, if it
	// has one, else its LastTimestamp.
	Since time.Time
}

// FieldSelector is the API's field selector for the Events WaitForEvent
// lists: those of q's involved object when q names one (so that a failure
// can show the object's other Events), else those of q's reason and type
// ("" when q names none of them). Matches decides the rest.
func (q EventQuery) FieldSelector() string {
	terms := [][2]string{{"involvedObject.kind", q.Kind}, {"involvedObject.name", q.Name}}
	if q.Kind == "" && q.Name == "" {
		terms = [][2]string{{"reason", q.Reason}, {"type", q.Type}}
	}
	var selector []string
	for _, term := range terms {
		if term[1] != "" {
			selector = append(selector, fields.OneTermEqualSelector(term[0], term[1]).String())
		}
	}
	return strings.Join(selector, ",")
}

// Matches reports whether ev is an Event q waits for.
func (q EventQuery) Matches(ev *corev1.Event) bool {
	switch {
	case q.Namespace != "" && ev.Namespace != q.Namespace,
		q.Kind != "" && ev.InvolvedObject.Kind != q.Kind,
		q.Name != "" && ev.InvolvedObject.Name != q.Name,
		q.Reason != "" && ev.Reason != q.Reason,
		q.Type != "" && ev.Type != q.Type,
		!strings.Contains(ev.Message, q.MessageContains):
		return false
	}
	if q.Since.IsZero() {
		return true
	}
	last := ev.LastTimestamp.Time
	if ev.Series != nil {
		last = ev.Series.LastObservedTime.Time
	}
	return !last.Before(q.Since.Truncate(time.Second))
}

// String describes q for a test's failure message.
func (q EventQuery) String() string {
	var b strings.Builder
	b.WriteString("Event")
	for _, part := range []struct{ label, value string }{
		{"type", q.Type}, {"reason", q.Reason}, {"namespace", q.Namespace}, {"kind", q.Kind}, {"name", q.Name},
	} {
		if part.value != "" {
			fmt.Fprintf(&b, " %s=%s", part.label, part.value)
		}
	}
	if q.MessageContains != "" {
		fmt.Fprintf(&b, " whose message contains %q", q.MessageContains)
	}
	if !q.Since.IsZero() {
		fmt.Fprintf(&b, " last seen at or after %s", q.Since.Truncate(time.Second).Format(time.RFC3339))
	}
	return b.String()
}

// WaitForEvent polls the Events of q's namespace (Poll with opts: every
// PollInterval unless PollEvery says otherwise) up to timeout for one that
// matches q, and returns it. A
// failed list counts as no match. On timeout the error names q and lists
// the Events of the last list (FieldSelector), with their reason and
// message.
func WaitForEvent(ctx context.Context, client kubernetes.Interface, q EventQuery, timeout time.Duration, opts ...PollOption) (*corev1.Event, error) {
	var (
		found   *corev1.Event
		seen    []string
		listErr error
	)
	err := Poll(ctx, timeout, func(ctx context.Context) bool {
		list, err := client.CoreV1().Events(q.Namespace).List(ctx, metav1.ListOptions{FieldSelector: q.FieldSelector()})
		if listErr = err; err != nil {
			return false
		}
		seen = seen[:0]
		for i := range list.Items {
			ev := &list.Items[i]
			if q.Matches(ev) {
				found = ev
				return true
			}
			seen = append(seen, ev.Reason+": "+ev.Message)
		}
		return false
	}, opts...)
	if err != nil {
		if listErr != nil {
			err = fmt.Errorf("%w (last list: %w)", err, listErr)
		}
		return nil, fmt.Errorf("no %s within %v (seen %q): %w", q, timeout, seen, err)
	}
	return found, nil
}
