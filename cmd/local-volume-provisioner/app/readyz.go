package app

import (
	"net/http"
	"sync/atomic"
)

// readiness answers the master's /readyz. A replica that runs no controller
// (a standby, before it leads) is ready; the leader is ready when its
// controller says so: once its informer caches have synced.
type readiness struct {
	check atomic.Pointer[func() error]
}

// set makes f the check; nil removes it.
func (r *readiness) set(f func() error) {
	if f == nil {
		r.check.Store(nil)
		return
	}
	r.check.Store(&f)
}

func (r *readiness) ready() error {
	if f := r.check.Load(); f != nil {
		return (*f)()
	}
	return nil
}

// ServeHTTP answers 200 "ok", or 503 with why the master is not ready.
func (r *readiness) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	if err := r.ready(); err != nil {
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
		return
	}
	_, _ = w.Write([]byte("ok"))
}
