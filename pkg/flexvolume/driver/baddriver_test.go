package driver

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestBadDrivers runs each misbehaving driver and checks that the call fails
// with a clear, classified error.
func TestBadDrivers(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "pid")
	tests := []struct {
		name    string
		path    func(t *testing.T) string
		cfg     Config
		wantErr error
		wantMsg string
		maxTime time.Duration
	}{
		{
			name:    "non-JSON output",
			path:    func(t *testing.T) string { return writeDriver(t, "echo hello world\n") },
			wantErr: ErrInvalidOutput,
			wantMsg: `output: "hello world\n"`,
		},
		{
			name:    "10 MiB of output",
			path:    func(t *testing.T) string { return writeDriver(t, "head -c 10485760 /dev/zero | tr '\\0' x\n") },
			wantErr: ErrOutputTooLarge,
			wantMsg: "1048576 bytes per stream",
		},
		{
			name: "hang",
			path: func(t *testing.T) string {
				return writeDriver(t, "sleep 300 &\necho $! > "+pidFile+"\nwait\n")
			},
			cfg:     Config{InitTimeout: 300 * time.Millisecond, KillGrace: time.Second},
			wantErr: ErrTimeout,
			wantMsg: "process group was killed",
			maxTime: 3 * time.Second,
		},
		{
			name:    "non-zero exit with Success JSON",
			path:    func(t *testing.T) string { return writeDriver(t, "echo '{\"status\":\"Success\"}'\nexit 2\n") },
			wantErr: ErrExitStatus,
			wantMsg: "driver bug",
		},
		{
			name:    "missing executable",
			path:    func(t *testing.T) string { return filepath.Join(t.TempDir(), "absent") },
			wantErr: ErrExecutableNotFound,
		},
		{
			name: "permission denied",
			path: func(t *testing.T) string {
				p := writeDriver(t, "echo '{\"status\":\"Success\"}'\n")
				if err := os.Chmod(p, 0o644); err != nil {
					t.Fatal(err)
				}
				return p
			},
			wantErr: ErrPermissionDenied,
		},
		{
			name:    "unknown status",
			path:    func(t *testing.T) string { return writeDriver(t, "echo '{\"status\":\"OK\"}'\n") },
			wantErr: ErrInvalidOutput,
			wantMsg: `unknown status "OK"`,
		},
		{
			name:    "no output",
			path:    func(t *testing.T) string { return writeDriver(t, "exit 0\n") },
			wantErr: ErrInvalidOutput,
			wantMsg: "no output",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			_, err := newTestDriver(tc.path(t), tc.cfg).Init(t.Context())
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("got %v, want %v", err, tc.wantErr)
			}
			var ce *CallError
			if !errors.As(err, &ce) || ce.Command != CmdInit {
				t.Errorf("error %v is not a *CallError for init", err)
			}
			if !strings.Contains(err.Error(), tc.wantMsg) {
				t.Errorf("error %q does not contain %q", err, tc.wantMsg)
			}
			if tc.maxTime > 0 && time.Since(start) > tc.maxTime {
				t.Errorf("call took %v, want under %v", time.Since(start), tc.maxTime)
			}
		})
	}
	assertProcessGone(t, pidFile)
}

// assertProcessGone checks that the hanging driver's child was killed with
// the driver's process group.
func assertProcessGone(t *testing.T, pidFile string) {
	t.Helper()
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatalf("reading the hanging driver's pid file: %v", err)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Errorf("child %d of the hanging driver is still running", pid)
}

func TestParseDirName(t *testing.T) {
	tests := []struct {
		dir        string
		wantPlugin string
		wantErr    string
	}{
		{dir: "example.com~nfs", wantPlugin: "example.com/nfs"},
		{dir: "nfs", wantPlugin: "nfs"},
		{dir: "k8s~Drv_1.x", wantPlugin: "k8s/Drv_1.x"},
		{dir: "", wantErr: "empty"},
		{dir: ".hidden~x", wantErr: "starting with '.'"},
		{dir: "a~b~c", wantErr: "single '~'"},
		{dir: "~drv", wantErr: "empty vendor"},
		{dir: "vendor~", wantErr: "invalid driver name"},
		{dir: "Vendor~drv", wantErr: "invalid vendor"},
		{dir: "vendor~-drv", wantErr: "invalid driver name"},
		{dir: "vendor~" + strings.Repeat("x", 64), wantErr: "invalid driver name"},
		{dir: "ven dor~drv", wantErr: "invalid vendor"},
	}
	for _, tc := range tests {
		t.Run(tc.dir, func(t *testing.T) {
			d, err := ParseDirName(tc.dir)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("got %v, want error containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if d.PluginName() != tc.wantPlugin || d.String() != tc.dir {
				t.Errorf("got plugin %q dir %q", d.PluginName(), d.String())
			}
		})
	}
}
