package prober

import (
	"maps"
	"sync"
)

// desiredDriver is one driver directory as the last scan saw it.
type desiredDriver struct {
	name     string // plugin name
	dirName  string
	execPath string
	fp       fingerprint
	// present: the executable exists (it may still fail to run).
	present bool
	// keep: the scan could not read this driver; keep whatever is loaded.
	keep bool
}

// desiredState is the desired state of the world: what is on disk. The
// populator writes it; the reconciler reads views. Its maps are replaced,
// never modified, so a view is valid without copying.
type desiredState struct {
	mu      sync.Mutex
	drivers map[string]desiredDriver // by plugin name
	// problems are directory-level problems by key (invalid driver
	// directory names, the plugin directory or a scan failing).
	problems map[string]string
	// scanned is false until the first successful scan.
	scanned bool
	// onChange is called, without the lock, after every change.
	onChange func()
}

func newDesiredState() *desiredState {
	return &desiredState{
		drivers:  map[string]desiredDriver{},
		problems: map[string]string{},
		onChange: func() {},
	}
}

// desiredView is a consistent view of desiredState. Its maps are shared:
// do not modify them.
type desiredView struct {
	drivers  map[string]desiredDriver
	problems map[string]string
	scanned  bool
}

// setScan replaces the drivers and the per-directory problems after a scan.
// It takes drivers over: the caller must not modify it afterwards.
func (d *desiredState) setScan(drivers map[string]desiredDriver, dirProblems map[string]string) {
	d.mu.Lock()
	d.drivers = drivers
	problems := maps.Clone(d.problems)
	maps.DeleteFunc(problems, func(k, _ string) bool { return isDirProblemKey(k) || k == problemScan })
	maps.Copy(problems, dirProblems)
	d.problems = problems
	d.scanned = true
	d.mu.Unlock()
	d.notify()
}

// setProblem sets (msg != "") or clears a problem that leaves the drivers
// as they are: the cached list is kept.
func (d *desiredState) setProblem(key, msg string) {
	d.mu.Lock()
	old, had := d.problems[key]
	problems := maps.Clone(d.problems)
	if msg == "" {
		delete(problems, key)
	} else {
		problems[key] = msg
	}
	d.problems = problems
	d.mu.Unlock()
	if had != (msg != "") || old != msg {
		d.notify()
	}
}

func (d *desiredState) get() desiredView {
	d.mu.Lock()
	defer d.mu.Unlock()
	return desiredView{drivers: d.drivers, problems: d.problems, scanned: d.scanned}
}

func (d *desiredState) notify() { d.onChange() }

// Problem keys.
const (
	problemPluginDir  = "plugin-dir"
	problemScan       = "scan"
	dirProblemPrefix  = "dir:"
	initProblemPrefix = "driver:"
)

func isDirProblemKey(k string) bool {
	return len(k) > len(dirProblemPrefix) && k[:len(dirProblemPrefix)] == dirProblemPrefix
}
