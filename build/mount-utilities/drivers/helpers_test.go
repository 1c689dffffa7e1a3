package drivers

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/nodeplug/nodeplug/pkg/util/testutil"
)

const busybox = "/bin/busybox"

// requireBusybox fails (under CI) or skips the test without the host's
// busybox, which runs the driver scripts as the image does.
func requireBusybox(t *testing.T) {
	t.Helper()
	if _, err := os.Stat(busybox); err != nil {
		testutil.MissingCapability(t, "needs %s (apt-get install busybox-static): %v", busybox, err)
	}
}

// runDriver runs the driver script with busybox sh, the environment env
// and args, and returns its stdout and exit code. It fails the test if the
// driver's stdout stays open after the driver exits (ExecSync would hang).
func runDriver(t *testing.T, script string, env []string, args ...string) ([]byte, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, busybox, append([]string{"sh", script}, args...)...)
	cmd.Env = env
	cmd.WaitDelay = 2 * time.Second
	out, err := cmd.Output()
	if errors.Is(err, exec.ErrWaitDelay) {
		t.Fatalf("driver %q: stdout still open after the driver exited (a child holds it)", args)
	}
	code := 0
	if exit, ok := errors.AsType[*exec.ExitError](err); ok {
		code = exit.ExitCode()
	} else if err != nil {
		t.Fatalf("driver %q: %v", args, err)
	}
	return out, code
}

// readDriverLog returns the lines of driver.log in logDir.
func readDriverLog(t *testing.T, logDir string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(logDir, "driver.log"))
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
}

// requireInitLogged checks that log is the one line an init call writes:
// "<UTC date> <host name> init".
func requireInitLogged(t *testing.T, log []string) {
	t.Helper()
	host, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	line := regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ ` + regexp.QuoteMeta(host) + ` init$`)
	if len(log) != 1 || !line.MatchString(log[0]) {
		t.Fatalf("driver.log = %q, want one line '<date> %s init'", log, host)
	}
}
