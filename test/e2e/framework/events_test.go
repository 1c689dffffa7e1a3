package framework

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

var eventNow = time.Date(2026, 11, 27, 6, 0, 10, 0, time.UTC)

// event is a Warning FailedMount Event of pod default/p, last seen at
// eventNow, changed by opts.
func event(name string, opts ...func(*corev1.Event)) *corev1.Event {
	ev := &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: name, Namespace: "default"},
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: "default", Name: "p"},
		Reason:         "FailedMount",
		Type:           corev1.EventTypeWarning,
		Message:        "MountVolume.SetUp failed for volume v: driver e2e.io/x not found",
		LastTimestamp:  metav1.NewTime(eventNow),
	}
	for _, o := range opts {
		o(ev)
	}
	return ev
}

func TestEventQueryMatches(t *testing.T) {
	series := func(ev *corev1.Event) {
		ev.LastTimestamp = metav1.NewTime(eventNow.Add(-time.Hour))
		ev.Series = &corev1.EventSeries{Count: 2, LastObservedTime: metav1.NewMicroTime(eventNow)}
	}
	tests := map[string]struct {
		q    EventQuery
		ev   *corev1.Event
		want bool
	}{
		"the empty query matches any Event":        {q: EventQuery{}, ev: event("e"), want: true},
		"every field given and matching":           {q: EventQuery{Namespace: "default", Kind: "Pod", Name: "p", Reason: "FailedMount", Type: "Warning", MessageContains: "e2e.io/x ", Since: eventNow}, ev: event("e"), want: true},
		"other namespace":                          {q: EventQuery{Namespace: "kube-system"}, ev: event("e")},
		"other kind":                               {q: EventQuery{Kind: "Node"}, ev: event("e")},
		"other name":                               {q: EventQuery{Name: "q"}, ev: event("e")},
		"other reason":                             {q: EventQuery{Reason: "FlexVolumeDriverLoaded"}, ev: event("e")},
		"other type":                               {q: EventQuery{Type: corev1.EventTypeNormal}, ev: event("e")},
		"message lacks the part":                   {q: EventQuery{MessageContains: "e2e.io/xy"}, ev: event("e")},
		"since: seen in the same second, later":    {q: EventQuery{Since: eventNow.Add(900 * time.Millisecond)}, ev: event("e"), want: true},
		"since: seen a second before":              {q: EventQuery{Since: eventNow.Add(time.Second)}, ev: event("e")},
		"since: a series' last observation counts": {q: EventQuery{Since: eventNow}, ev: event("e", series), want: true},
		"since: no timestamp at all":               {q: EventQuery{Since: eventNow}, ev: event("e", func(ev *corev1.Event) { ev.LastTimestamp = metav1.Time{} })},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := tc.q.Matches(tc.ev); got != tc.want {
				t.Errorf("%s: Matches = %v, want %v", tc.q, got, tc.want)
			}
		})
	}
}

func TestEventQueryFieldSelector(t *testing.T) {
	tests := map[string]struct {
		q    EventQuery
		want string
	}{
		"nothing to select":                 {q: EventQuery{Namespace: "default", MessageContains: "x", Since: eventNow}, want: ""},
		"an object: its Events, any reason": {q: EventQuery{Kind: "Node", Name: "n1", Reason: "FlexVolumeDriverLoaded", Type: "Normal"}, want: "involvedObject.kind=Node,involvedObject.name=n1"},
		"a name alone":                      {q: EventQuery{Name: "p", Reason: "FailedMount"}, want: "involvedObject.name=p"},
		"no object: reason and type":        {q: EventQuery{Reason: "DiskSkipped", Type: "Warning", MessageContains: "wwn"}, want: "reason=DiskSkipped,type=Warning"},
		"a value is escaped":                {q: EventQuery{Name: "a,b"}, want: `involvedObject.name=a\,b`},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := tc.q.FieldSelector(); got != tc.want {
				t.Errorf("FieldSelector = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestWaitForEvent runs WaitForEvent against a fake clientset. The fake
// ignores field selectors, so what matches is decided by Matches alone.
func TestWaitForEvent(t *testing.T) {
	q := EventQuery{Namespace: "default", Name: "p", Reason: "FailedMount", MessageContains: "not found"}
	tests := map[string]struct {
		objects  []runtime.Object
		later    *corev1.Event // created after the first list
		listErr  error         // every list fails with it
		wantName string        // "" for a timeout
		wantErr  []string
	}{
		"already there":         {objects: []runtime.Object{event("other", func(ev *corev1.Event) { ev.Reason = "Scheduled" }), event("hit")}, wantName: "hit"},
		"created while waiting": {later: event("late"), wantName: "late"},
		"only others: the error lists them": {
			objects: []runtime.Object{event("other", func(ev *corev1.Event) { ev.Message = "mounted" })},
			wantErr: []string{"no Event reason=FailedMount namespace=default name=p", `FailedMount: mounted`, "deadline exceeded"},
		},
		"the object's other Events are in the error": {
			objects: []runtime.Object{event("sched", func(ev *corev1.Event) { ev.Reason, ev.Type, ev.Message = "Scheduled", "Normal", "assigned" })},
			wantErr: []string{"Scheduled: assigned"},
		},
		"another namespace's Event": {
			objects: []runtime.Object{event("else", func(ev *corev1.Event) { ev.Namespace = "kube-system" })},
			wantErr: []string{"no Event"},
		},
		"every list fails": {listErr: errors.New("apiserver down"), wantErr: []string{"last list: apiserver down"}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			client := fake.NewClientset(tc.objects...)
			lists := 0
			client.PrependReactor("list", "events", func(k8stesting.Action) (bool, runtime.Object, error) {
				lists++
				if lists == 2 && tc.later != nil {
					if err := client.Tracker().Add(tc.later); err != nil {
						t.Error(err)
					}
				}
				return tc.listErr != nil, nil, tc.listErr
			})
			ev, err := WaitForEvent(t.Context(), client, q, 50*time.Millisecond, PollEvery(time.Millisecond))
			if tc.wantName != "" {
				if err != nil || ev.Name != tc.wantName {
					t.Fatalf("WaitForEvent = %v, %v; want Event %s", ev, err, tc.wantName)
				}
				return
			}
			if err == nil {
				t.Fatalf("WaitForEvent = %s, want a timeout", ev.Name)
			}
			for _, want := range tc.wantErr {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not contain %q", err, want)
				}
			}
		})
	}
}

// TestWaitForEventList: the list asks the API for q's namespace and field
// selector.
func TestWaitForEventList(t *testing.T) {
	client := fake.NewClientset(event("hit"))
	var got k8stesting.ListActionImpl
	client.PrependReactor("list", "events", func(a k8stesting.Action) (bool, runtime.Object, error) {
		got = a.(k8stesting.ListActionImpl)
		return false, nil, nil
	})
	q := EventQuery{Namespace: "default", Name: "p", Reason: "FailedMount"}
	if _, err := WaitForEvent(context.Background(), client, q, time.Second); err != nil {
		t.Fatal(err)
	}
	if got.Namespace != "default" || got.ListRestrictions.Fields.String() != "involvedObject.name=p" {
		t.Errorf("listed namespace %q with fields %q, want default with q's selector", got.Namespace, got.ListRestrictions.Fields)
	}
}
