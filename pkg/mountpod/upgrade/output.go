package upgrade

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"time"
)

// Exit codes of a run.
const (
	ExitOK          = 0
	ExitFailed      = 1 // an API call failed, or the old pod's mount table could not be read
	ExitUsage       = 2 // usage, or a precondition
	ExitRefused     = 3 // a pod that tolerates the taint uses a served volume
	ExitTimeout     = 4
	ExitInterrupted = 130
)

// Failure ends a run with Code; Hint says what to do about it.
type Failure struct {
	Code      int
	Msg, Hint string
}

func (f *Failure) Error() string { return f.Msg }

func fail(code int, hint, format string, args ...any) *Failure {
	return &Failure{Code: code, Msg: fmt.Sprintf(format, args...), Hint: hint}
}

// report writes the "[NODE] ..." lines, times the steps and keeps the
// summary.
type report struct {
	out, err io.Writer
	clock    Clock
	summary  []string

	node   string
	nodeT0 time.Time
	step   string
	stepT0 time.Time
	steps  []string
}

func (r *report) say(format string, args ...any) {
	fmt.Fprintf(r.out, "[%s] %s\n", r.node, fmt.Sprintf(format, args...))
}

func (r *report) warn(format string, args ...any) {
	fmt.Fprintf(r.err, "[%s] warning: %s\n", r.node, fmt.Sprintf(format, args...))
}

// lines writes each line as it is (already indented), to out or err.
func (r *report) lines(toErr bool, lines []string) {
	w := r.out
	if toErr {
		w = r.err
	}
	for _, l := range lines {
		fmt.Fprintln(w, l)
	}
}

func (r *report) startNode(node string) {
	r.node, r.nodeT0, r.step, r.steps = node, r.clock.Now(), "", nil
}

func (r *report) startStep(step string) { r.step, r.stepT0 = step, r.clock.Now() }

// doneStep prints "[NODE] STEP: S s" and keeps it for the summary.
func (r *report) doneStep() {
	s := seconds(r.clock.Now().Sub(r.stepT0))
	r.say("%s: %s s", r.step, s)
	r.steps = append(r.steps, r.step+" "+s+" s")
	r.step = ""
}

// record adds the node's summary line.
func (r *report) record(result string) {
	steps := ""
	if len(r.steps) > 0 {
		steps = " (" + strings.Join(r.steps, ", ") + ")"
	}
	r.summary = append(r.summary, fmt.Sprintf("[%s] %s: %s s%s", r.node, result, seconds(r.clock.Now().Sub(r.nodeT0)), steps))
}

// failed prints err, records the node's result and returns the exit code.
func (r *report) failed(err error) int {
	f, ok := errors.AsType[*Failure](err)
	if !ok {
		f = &Failure{Code: ExitFailed, Msg: err.Error()}
	}
	in := ""
	if r.step != "" {
		in = " in " + r.step
	}
	if f.Code == ExitInterrupted {
		fmt.Fprintf(r.err, "[%s] interrupted%s. If the node is tainted %s, run the command again to finish (it resumes), or untaint by hand: %s\n",
			r.node, in, TaintKey, untaintCommand(r.node))
		r.record("interrupted" + in)
		return f.Code
	}
	fmt.Fprintf(r.err, "[%s] error: %s\n", r.node, f.Msg)
	if f.Hint != "" {
		fmt.Fprintf(r.err, "[%s] hint: %s\n", r.node, f.Hint)
	}
	what := "failed"
	switch f.Code {
	case ExitRefused:
		what = "refused"
	case ExitTimeout:
		what = "timed out"
	}
	r.record(fmt.Sprintf("%s (exit %d)%s", what, f.Code, in))
	return f.Code
}

// finish prints the summary.
func (r *report) finish() {
	if len(r.summary) == 0 {
		return
	}
	fmt.Fprintln(r.out, "summary:")
	for _, s := range r.summary {
		fmt.Fprintln(r.out, "  "+s)
	}
}

// seconds formats d in seconds with one decimal.
func seconds(d time.Duration) string { return fmt.Sprintf("%.1f", d.Seconds()) }

func untaintCommand(node string) string {
	return fmt.Sprintf("kubectl taint nodes %s %s:%s-", node, TaintKey, TaintEffect)
}
