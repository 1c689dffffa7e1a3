package prober

import (
	"context"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/record"
)

// NewRecorderSink returns an EventSink that records every Event on obj
// (normally the Node object, or a reference to it) through recorder.
func NewRecorderSink(recorder record.EventRecorder, obj runtime.Object) EventSink {
	return &recorderSink{recorder: recorder, obj: obj}
}

type recorderSink struct {
	recorder record.EventRecorder
	obj      runtime.Object
}

func (s *recorderSink) Event(_ context.Context, ev Event) {
	s.recorder.Event(s.obj, ev.Type, ev.Reason, ev.Message)
}
