package main

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// run is the go test -json lines of one test: started, its log lines, and
// its end (pass, fail, skip, or "" for none).
func run(pkg, test, end string, logs ...string) []string {
	ev := func(action, out string) string {
		b, _ := json.Marshal(event{Action: action, Package: pkg, Test: test, Output: out})
		return string(b)
	}
	lines := []string{ev("run", ""), ev("output", "=== RUN   "+test+"\n")}
	for _, l := range logs {
		lines = append(lines, ev("output", "    x_test.go:10: "+l+"\n"))
	}
	if end != "" {
		lines = append(lines, ev("output", "--- "+strings.ToUpper(end)+": "+test+" (0.01s)\n"), ev(end, ""))
	}
	return lines
}

func pkgEnd(pkg, action string) string {
	b, _ := json.Marshal(event{Action: action, Package: pkg})
	return string(b)
}

func TestCount(t *testing.T) {
	const p = "github.com/nodeplug/nodeplug/test/e2e"
	tests := map[string]struct {
		lines      [][]string
		wantPassed []string
		wantFailed []string
		wantLocal  []string
		wantOther  []string
		wantPkg    []string
		wantOK     bool
		wantReport []string
	}{
		"passes only": {
			lines:      [][]string{run(p, "TestA", "pass"), run(p, "TestB", "pass"), {pkgEnd(p, "pass")}},
			wantPassed: []string{"TestA", "TestB"}, wantOK: true,
			wantReport: []string{"2 tests passed, 0 failed, 0 skipped because they need the local cluster's host; 0 skipped for other reasons"},
		},
		"a failure fails the run": {
			lines:      [][]string{run(p, "TestA", "pass"), run(p, "TestB", "fail", "boom"), {pkgEnd(p, "fail")}},
			wantPassed: []string{"TestA"}, wantFailed: []string{"TestB"},
			wantReport: []string{"1 tests passed, 1 failed", "failed: TestB"},
		},
		"local-host skips are counted, by name, and keep the run green": {
			lines: [][]string{run(p, "TestA", "pass"),
				run(p, "TestFlex", "skip", "needs the local cluster's host: files in LOCAL_UP_DIR"),
				run(p, "TestRestart", "skip", "needs the local cluster's host: local-up's pid file of kubelet"),
				{pkgEnd(p, "pass")}},
			wantPassed: []string{"TestA"}, wantLocal: []string{"TestFlex", "TestRestart"}, wantOK: true,
			wantReport: []string{"1 tests passed, 0 failed, 2 skipped because they need the local cluster's host: TestFlex, TestRestart; 0 skipped for other reasons"},
		},
		"other skips are listed with their reason": {
			lines: [][]string{run(p, "TestA", "pass"),
				run(p, "TestMulti", "skip", "started", "the cluster has 1 node(s); this test needs 2"),
				{pkgEnd(p, "pass")}},
			wantPassed: []string{"TestA"}, wantOther: []string{"TestMulti: x_test.go:10: the cluster has 1 node(s); this test needs 2"}, wantOK: true,
			wantReport: []string{"; 1 skipped for other reasons", "skipped: TestMulti: x_test.go:10: the cluster has 1 node(s)"},
		},
		"subtests count, their parent does not": {
			lines: [][]string{
				run(p, "TestT/one", "pass"), run(p, "TestT/two", "skip", "needs the local cluster's host: a loop device the nodes see"),
				run(p, "TestT", "pass"), {pkgEnd(p, "pass")}},
			wantPassed: []string{"TestT/one"}, wantLocal: []string{"TestT/two"}, wantOK: true,
		},
		"a parent failing after its subtests passed counts": {
			lines:      [][]string{run(p, "TestT/one", "pass"), run(p, "TestT", "fail", "cleanup failed"), {pkgEnd(p, "fail")}},
			wantPassed: []string{"TestT/one"}, wantFailed: []string{"TestT"},
		},
		"a failed subtest counts once": {
			lines:      [][]string{run(p, "TestT/one", "fail"), run(p, "TestT", "fail"), {pkgEnd(p, "fail")}},
			wantFailed: []string{"TestT/one"},
		},
		"a test cut short by a timeout fails": {
			lines:      [][]string{run(p, "TestA", "pass"), run(p, "TestSlow", "", "panic: test timed out after 30m0s"), {pkgEnd(p, "fail")}},
			wantPassed: []string{"TestA"},
			wantReport: []string{"1 tests passed, 1 failed", "failed (never ended): TestSlow"},
		},
		"a package that does not build fails": {
			lines:      [][]string{{"# github.com/nodeplug/nodeplug/test/e2e", "x_test.go:1:1: syntax error", pkgEnd(p, "fail")}},
			wantPkg:    []string{p},
			wantReport: []string{"failed package (build error, panic or timeout): " + p},
		},
		"no test ran is not green": {
			lines:      [][]string{{pkgEnd(p, "pass")}},
			wantReport: []string{"no test ran"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			var in []string
			for _, l := range tc.lines {
				in = append(in, l...)
			}
			var live strings.Builder
			s, err := count(strings.NewReader(strings.Join(in, "\n")+"\n"), &live)
			if err != nil {
				t.Fatal(err)
			}
			check := func(what string, got, want []string) {
				t.Helper()
				if !slices.Equal(got, want) {
					t.Errorf("%s = %q, want %q", what, got, want)
				}
			}
			check("passed", s.passed, tc.wantPassed)
			check("failed", s.failed, tc.wantFailed)
			check("local-host skips", s.localSkips, tc.wantLocal)
			check("other skips", s.otherSkips, tc.wantOther)
			check("failed packages", s.packageFail, tc.wantPkg)
			if s.ok() != tc.wantOK {
				t.Errorf("ok() = %v, want %v", s.ok(), tc.wantOK)
			}
			report := s.report()
			for _, w := range tc.wantReport {
				if !strings.Contains(report, w) {
					t.Errorf("report does not contain %q:\n%s", w, report)
				}
			}
			if strings.Contains(live.String(), `"Action"`) || !strings.Contains(live.String(), "=== RUN") && len(tc.wantPassed) > 0 {
				t.Errorf("live output is not the tests' own:\n%s", live.String())
			}
		})
	}
}
