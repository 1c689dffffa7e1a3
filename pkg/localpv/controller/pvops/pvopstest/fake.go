package pvopstest

import (
	"context"
	"fmt"
	"sync"

	v1 "k8s.io/api/core/v1"

	"github.com/nodeplug/nodeplug/pkg/localpv/controller/pvops"
)

// Fake records the calls made to it, one string per call:
//
//	delete <pv> exact=<bool> reason=<reason>
//	removeFinalizer <pv>
//	warnClaim <pv> <reason> <status>
//	clearClaimHealth <pv>
//
// Err, when set, is returned by Delete and RemoveFinalizer.
type Fake struct {
	Err error

	mu    sync.Mutex
	calls []string
}

var _ pvops.Interface = &Fake{}

func (f *Fake) record(format string, args ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, fmt.Sprintf(format, args...))
}

// Calls returns the calls made so far and forgets them.
func (f *Fake) Calls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := f.calls
	f.calls = nil
	return out
}

func (f *Fake) Delete(_ context.Context, pv *v1.PersistentVolume, exact bool, reason string) error {
	f.record("delete %s exact=%t reason=%s", pv.Name, exact, reason)
	return f.Err
}

func (f *Fake) RemoveFinalizer(_ context.Context, pv *v1.PersistentVolume) error {
	f.record("removeFinalizer %s", pv.Name)
	return f.Err
}

func (f *Fake) WarnClaim(_ context.Context, pv *v1.PersistentVolume, reason, _ string, status v1.VolumeHealthStatusType) {
	f.record("warnClaim %s %s %s", pv.Name, reason, status)
}

func (f *Fake) ClearClaimHealth(_ context.Context, pv *v1.PersistentVolume) {
	f.record("clearClaimHealth %s", pv.Name)
}
