package testutil

import (
	"fmt"
	"strings"
	"testing"
)

// recorder stands in for a *testing.T: it records Fatalf and Skipf
// instead of ending the goroutine.
type recorder struct {
	testing.TB
	fatal, skip []string
}

func (r *recorder) Helper() {}
func (r *recorder) Fatalf(format string, args ...any) {
	r.fatal = append(r.fatal, fmt.Sprintf(format, args...))
}
func (r *recorder) Skipf(format string, args ...any) {
	r.skip = append(r.skip, fmt.Sprintf(format, args...))
}

func TestMissingCapability(t *testing.T) {
	for _, tc := range []struct {
		ci        string
		wantFatal bool
	}{
		{ci: "", wantFatal: false},
		{ci: "false", wantFatal: false},
		{ci: "1", wantFatal: false},
		{ci: "true", wantFatal: true},
	} {
		t.Run("CI="+tc.ci, func(t *testing.T) {
			t.Setenv(CIEnv, tc.ci)
			r := &recorder{}
			MissingCapability(r, "needs %s", "a loop device")
			got := r.skip
			if tc.wantFatal {
				got = r.fatal
			}
			if len(r.fatal)+len(r.skip) != 1 || len(got) != 1 || !strings.HasSuffix(got[0], "needs a loop device") {
				t.Errorf("fatal %q, skip %q; want exactly one %s naming the missing capability",
					r.fatal, r.skip, map[bool]string{true: "Fatalf", false: "Skipf"}[tc.wantFatal])
			}
		})
	}
}

func TestRequireCommand(t *testing.T) {
	t.Setenv(CIEnv, "true")
	r := &recorder{}
	RequireCommand(r, "sh")
	if len(r.fatal)+len(r.skip) != 0 {
		t.Errorf("sh is in $PATH, but fatal %q, skip %q", r.fatal, r.skip)
	}
	RequireCommand(r, "sh", "nodeplug-no-such-command", "nodeplug-no-such-command-either")
	if len(r.fatal) != 1 || !strings.Contains(r.fatal[0], "needs nodeplug-no-such-command:") || len(r.skip) != 0 {
		t.Errorf("fatal %q, skip %q; want one Fatalf naming the first missing command", r.fatal, r.skip)
	}
}
