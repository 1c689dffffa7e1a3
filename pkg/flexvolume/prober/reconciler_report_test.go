package prober

import (
	"testing"

	utilexec "k8s.io/utils/exec"
)

func TestDirProblemEventReasons(t *testing.T) {
	tests := []struct {
		name       string
		key        string
		wantReason string
		wantDriver string
	}{
		{name: "plugin dir unavailable", key: problemPluginDir, wantReason: ReasonPluginDirUnavailable},
		{name: "scan failed", key: problemScan, wantReason: ReasonPluginDirScanFailed},
		{name: "invalid driver dir", key: dirProblemPrefix + "Bad~Name", wantReason: ReasonDriverDirInvalid, wantDriver: "Bad~Name"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := &sink{}
			opts := testOptions(s).withDefaults()
			r := newReconciler(t.Context(), &opts, utilexec.New(), newDesiredState(), &stats{})
			if !r.reportDirProblems(t.Context(), map[string]string{tc.key: "boom"}) {
				t.Fatal("new problem not reported as a change")
			}
			if len(s.events) != 1 {
				t.Fatalf("got events %+v, want one", s.events)
			}
			ev := s.events[0]
			if ev.Type != EventTypeWarning || ev.Reason != tc.wantReason || ev.Driver != tc.wantDriver || ev.Message != "boom" {
				t.Errorf("got %+v, want Warning %s for driver %q", ev, tc.wantReason, tc.wantDriver)
			}
			// Once per change: the same problem again is not reported.
			if r.reportDirProblems(t.Context(), map[string]string{tc.key: "boom"}) || len(s.events) != 1 {
				t.Errorf("unchanged problem reported again: %+v", s.events)
			}
		})
	}
}
