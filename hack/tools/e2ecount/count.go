package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
)

// localHostSkip starts the skip message of a test that needs the local
// cluster's host (test/e2e/framework.LocalHostSkipPrefix).
const localHostSkip = "needs the local cluster's host: "

// event is one line of go test -json (cmd/test2json).
type event struct {
	Action  string
	Package string
	Test    string
	Output  string
}

// result is what a test (or subtest) ended with, and why it skipped.
type result struct {
	action string // pass, fail or skip; "" while it runs
	reason string // the first line of its output with localHostSkip, or its last log line
	local  bool   // skipped with localHostSkip
}

// summary is the counts of a run, over leaf tests (those without
// subtests); a test that failed with no failed subtest counts as failed
// too, and so does a package that failed outside its tests (a build
// error, a panic, a timeout).
type summary struct {
	passed      []string
	failed      []string
	localSkips  []string
	otherSkips  []string // name: reason
	unfinished  []string // started, never ended (the run was cut short)
	packageFail []string
}

// count reads go test -json from r, writes the tests' output to live as it
// arrives, and returns the run's summary. Lines that are not JSON (go's
// own errors on stderr) are passed through to live.
func count(r io.Reader, live io.Writer) (*summary, error) {
	tests := map[string]*result{} // by package + "\x00" + test
	pkgFailed := map[string]bool{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 16*1024*1024)
	for sc.Scan() {
		line := sc.Bytes()
		var ev event
		if len(line) == 0 || line[0] != '{' || json.Unmarshal(line, &ev) != nil {
			fmt.Fprintf(live, "%s\n", line)
			continue
		}
		if ev.Output != "" {
			fmt.Fprint(live, ev.Output)
		}
		if ev.Test == "" {
			if ev.Action == "fail" {
				pkgFailed[ev.Package] = true
			}
			continue
		}
		key := ev.Package + "\x00" + ev.Test
		res := tests[key]
		if res == nil {
			res = &result{}
			tests[key] = res
		}
		switch ev.Action {
		case "output":
			noteOutput(res, ev.Output)
		case "pass", "fail", "skip":
			res.action = ev.Action
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return summarize(tests, pkgFailed), nil
}

// noteOutput keeps the reason a test may skip with: the first
// localHostSkip line, else the last line it logged.
func noteOutput(res *result, out string) {
	if res.local {
		return
	}
	text := strings.TrimSpace(out)
	if text == "" || strings.HasPrefix(text, "=== ") || strings.HasPrefix(text, "--- ") {
		return
	}
	if i := strings.Index(text, localHostSkip); i >= 0 {
		res.local, res.reason = true, strings.TrimSpace(text[i+len(localHostSkip):])
		return
	}
	res.reason = text
}

func summarize(tests map[string]*result, pkgFailed map[string]bool) *summary {
	keys := make([]string, 0, len(tests))
	for k := range tests {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	hasSub := map[string]bool{}      // a test with subtests
	failedBelow := map[string]bool{} // a test with a failed subtest
	for _, k := range keys {
		for p := parent(k); p != ""; p = parent(p) {
			hasSub[p] = true
			if tests[k].action == "fail" {
				failedBelow[p] = true
			}
		}
	}
	s := &summary{}
	pkgWithFailedTest := map[string]bool{} // or an unfinished one
	for _, k := range keys {
		res, name := tests[k], displayName(k)
		if res.action == "fail" || res.action == "" {
			pkgWithFailedTest[strings.SplitN(k, "\x00", 2)[0]] = true
		}
		if hasSub[k] && (res.action != "fail" || failedBelow[k]) {
			continue
		}
		switch {
		case res.action == "pass":
			s.passed = append(s.passed, name)
		case res.action == "fail":
			s.failed = append(s.failed, name)
		case res.action == "skip" && res.local:
			s.localSkips = append(s.localSkips, name)
		case res.action == "skip":
			s.otherSkips = append(s.otherSkips, name+": "+res.reason)
		default:
			s.unfinished = append(s.unfinished, name)
		}
	}
	for pkg := range pkgFailed {
		if !pkgWithFailedTest[pkg] {
			s.packageFail = append(s.packageFail, pkg)
		}
	}
	sort.Strings(s.packageFail)
	return s
}

// parent is the key of the test's parent test, or "" for a top-level one.
func parent(key string) string {
	i := strings.LastIndex(key, "/")
	if i < 0 || i < strings.Index(key, "\x00") {
		return ""
	}
	return key[:i]
}

// displayName is the test's name without its package.
func displayName(key string) string { return key[strings.Index(key, "\x00")+1:] }

// ok reports whether the run counts as green: tests ran and none failed.
func (s *summary) ok() bool {
	return len(s.failed) == 0 && len(s.packageFail) == 0 && len(s.unfinished) == 0 &&
		len(s.passed)+len(s.localSkips)+len(s.otherSkips) > 0
}

// report is the closing text: one line of counts, then the names.
func (s *summary) report() string {
	var b strings.Builder
	fmt.Fprintf(&b, "\n%d tests passed, %d failed, %d skipped because they need the local cluster's host",
		len(s.passed), len(s.failed)+len(s.unfinished), len(s.localSkips))
	if len(s.localSkips) > 0 {
		fmt.Fprintf(&b, ": %s", strings.Join(s.localSkips, ", "))
	}
	fmt.Fprintf(&b, "; %d skipped for other reasons\n", len(s.otherSkips))
	for _, n := range s.failed {
		fmt.Fprintf(&b, "failed: %s\n", n)
	}
	for _, n := range s.unfinished {
		fmt.Fprintf(&b, "failed (never ended): %s\n", n)
	}
	for _, p := range s.packageFail {
		fmt.Fprintf(&b, "failed package (build error, panic or timeout): %s\n", p)
	}
	for _, n := range s.otherSkips {
		fmt.Fprintf(&b, "skipped: %s\n", n)
	}
	if len(s.passed)+len(s.failed)+len(s.unfinished)+len(s.localSkips)+len(s.otherSkips) == 0 {
		b.WriteString("no test ran\n")
	}
	return b.String()
}
