package watcher

import "time"

// pacer decides when the watcher looks at the disks again. File events are
// debounced: a new directory or symlink is often followed by the mount that
// makes it a disk. A mount table change is what a new disk looks like, so it
// is looked at at once, unless the last look was less than debounce ago;
// changes within that interval are folded into one look at its end.
type pacer struct {
	debounce time.Duration
	lastRun  time.Time
	// due is when the next look is due; zero when none is.
	due time.Time
}

// fileEvent records a file event at now and returns when to look.
func (p *pacer) fileEvent(now time.Time) time.Time { return p.at(now.Add(p.debounce)) }

// mountEvent records a mount table change at now and returns when to look.
func (p *pacer) mountEvent(now time.Time) time.Time {
	return p.at(maxTime(now, p.lastRun.Add(p.debounce)))
}

// retry asks for a look at t (a resync, or a retry after a failure).
func (p *pacer) retry(t time.Time) time.Time { return p.at(t) }

// running records a look starting at now; none is due afterwards.
func (p *pacer) running(now time.Time) {
	p.lastRun, p.due = now, time.Time{}
}

// idle reports whether no look is due.
func (p *pacer) idle() bool { return p.due.IsZero() }

// at makes a look due at t, unless one is due sooner, and returns when the
// next look is due.
func (p *pacer) at(t time.Time) time.Time {
	if p.due.IsZero() || t.Before(p.due) {
		p.due = t
	}
	return p.due
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
