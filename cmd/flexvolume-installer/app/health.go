package app

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"k8s.io/klog/v2"

	"github.com/nodeplug/nodeplug/pkg/flexvolume/installer"
)

// readiness holds the drivers once every one is installed; until then it is
// nil and the installer is not ready.
type readiness struct {
	installed atomic.Pointer[[]*installer.Installed]
}

func (r *readiness) set(in []*installer.Installed) { r.installed.Store(&in) }

// check returns nil when every driver is installed and still in place.
func (r *readiness) check() error {
	in := r.installed.Load()
	if in == nil {
		return errors.New("drivers not installed yet")
	}
	var errs []error
	for _, d := range *in {
		errs = append(errs, d.Check())
	}
	return errors.Join(errs...)
}

func (r *readiness) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		if err := r.check(); err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	return mux
}

// serveHealth listens on addr and serves /healthz and /readyz until ctx
// ends. The listener is opened before it returns, so a bad address fails
// the start instead of the first probe.
func serveHealth(ctx context.Context, addr string, r *readiness) error {
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", addr)
	if err != nil {
		return fmt.Errorf("--health-address: %w", err)
	}
	srv := &http.Server{Handler: r.handler(), ReadHeaderTimeout: 10 * time.Second}
	logger := klog.FromContext(ctx)
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			logger.Error(err, "Health server stopped")
		}
	}()
	go func() {
		<-ctx.Done()
		shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdownCtx)
	}()
	logger.Info("Serving health checks", "address", ln.Addr().String())
	return nil
}
