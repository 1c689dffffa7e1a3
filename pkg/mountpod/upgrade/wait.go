package upgrade

import (
	"context"
	"errors"
)

// errWaitTimeout is what poll returns when its condition does not hold in
// time.
var errWaitTimeout = errors.New("timed out")

// poll calls cond until it returns true or an error, or Timeout has passed
// (errWaitTimeout), sleeping PollInterval in between. It returns ctx's
// error when ctx ends.
func (r *nodeRun) poll(ctx context.Context, cond func() (bool, error)) error {
	deadline := r.clock.Now().Add(r.cfg.Timeout)
	for {
		done, err := cond()
		if err != nil || done {
			return err
		}
		if !r.clock.Now().Before(deadline) {
			return errWaitTimeout
		}
		if err := r.clock.Sleep(ctx, r.cfg.PollInterval); err != nil {
			return err
		}
	}
}

// timedOut turns errWaitTimeout into a Failure with ExitTimeout; other
// errors pass.
func timedOut(err error, msg, hint string) error {
	if errors.Is(err, errWaitTimeout) {
		return &Failure{Code: ExitTimeout, Msg: msg, Hint: hint}
	}
	return err
}

// once warns with msg unless the last warning of kind said the same.
func (r *nodeRun) once(kind, msg string) {
	if r.said[kind] == msg {
		return
	}
	r.said[kind] = msg
	r.warn("%s", msg)
}
