package app

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	logsapi "k8s.io/component-base/logs/api/v1"

	"github.com/nodeplug/nodeplug/pkg/localpv/discovery"
	"github.com/nodeplug/nodeplug/pkg/localpv/jobs"
	"github.com/nodeplug/nodeplug/pkg/localpv/report"
	"github.com/nodeplug/nodeplug/pkg/localpv/testutil"
)

func runCommand(t *testing.T, args ...string) error {
	t.Helper()
	if err := logsapi.ResetForTest(nil); err != nil {
		t.Fatal(err)
	}
	cmd := NewCommand()
	cmd.SetArgs(args)
	cmd.SetOut(&strings.Builder{})
	cmd.SetErr(&strings.Builder{})
	return cmd.ExecuteContext(t.Context())
}

func TestDiscoverCommandWritesShards(t *testing.T) {
	testutil.RequireRoot(t)
	root := t.TempDir()
	testutil.MountTmpfs(t, filepath.Join(root, "vol1"), 1<<20)
	classes, _ := json.Marshal([]discovery.ClassSpec{{Name: "fast", MountDir: root, VolumeMode: "Filesystem", NamePattern: "*"}})
	var msgs []string
	for i := range 2 {
		log := filepath.Join(t.TempDir(), "termination-log")
		err := runCommand(t, "discover", "--node-name=n1", "--classes="+string(classes),
			"--shard="+strconv.Itoa(i), "--shards=2", "--termination-log="+log, "--held-omitted=3",
			`--held-paths=[{"p":"/host/vol1","c":"`+filepath.Join(root, "vol1")+`"},{"p":"/var/lib/x","c":""}]`)
		if err != nil {
			t.Fatalf("discover: %v", err)
		}
		b, err := os.ReadFile(log)
		if err != nil {
			t.Fatal(err)
		}
		msgs = append(msgs, string(b))
	}
	r, err := report.Decode(msgs)
	if err != nil {
		t.Fatalf("Decode: %v", err)
	}
	if len(r.Classes) != 1 || len(r.Classes[0].Volumes) != 1 || r.Classes[0].Volumes[0].Name != "vol1" {
		t.Fatalf("unexpected report %+v", r)
	}
	v := r.Classes[0].Volumes[0]
	if v.ID == "" || len(r.Held) != 2 || r.Held[0].ID != v.ID || r.Held[1].Error != discovery.ErrHeldNotVisible {
		t.Errorf("volume identity %q, held %+v: want the volume's identity, then an invisible path", v.ID, r.Held)
	}
	if r.HeldOmitted != 3 {
		t.Errorf("report counts %d omitted held paths, want the 3 of --held-omitted", r.HeldOmitted)
	}
}

func TestJobCommandsRecordBadFlags(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		wantErr string
	}{
		{name: "discover without node", args: []string{"discover", "--node-name=", `--classes=[{"name":"a","mountDir":"/m"}]`}, wantErr: "--node-name is required"},
		{name: "discover with bad classes", args: []string{"discover", "--node-name=n", "--classes={"}, wantErr: "--classes is not a JSON list"},
		{name: "discover with no classes", args: []string{"discover", "--node-name=n", "--classes=[]"}, wantErr: "--classes is empty"},
		{name: "discover with relative dir", args: []string{"discover", "--node-name=n", `--classes=[{"name":"a","mountDir":"m"}]`}, wantErr: "clean absolute mountDir"},
		{name: "discover shard out of range", args: []string{"discover", "--node-name=n", `--classes=[{"name":"a","mountDir":"/m"}]`, "--shard=3", "--shards=3"}, wantErr: "--shard must be between 0 and 2"},
		{name: "discover too many shards", args: []string{"discover", "--node-name=n", `--classes=[{"name":"a","mountDir":"/m"}]`, "--shards=4"}, wantErr: "--shards must be between 1 and 3"},
		{name: "discover with a negative count of omitted held paths", args: []string{"discover", "--node-name=n", `--classes=[{"name":"a","mountDir":"/m"}]`, "--held-omitted=-1"}, wantErr: "--held-omitted must not be negative"},
		{name: "discover with bad held paths", args: []string{"discover", "--node-name=n", `--classes=[{"name":"a","mountDir":"/m"}]`, "--held-paths={"}, wantErr: "--held-paths is not a JSON list"},
		{name: "discover with a relative held path", args: []string{"discover", "--node-name=n", `--classes=[{"name":"a","mountDir":"/m"}]`, `--held-paths=[{"p":"/a","c":"m/a"}]`}, wantErr: "clean absolute container path"},
		{name: "discover with too many held paths", args: []string{"discover", "--node-name=n", `--classes=[{"name":"a","mountDir":"/m"}]`, "--held-paths=[" + strings.Repeat(`{"p":"/a","c":""},`, report.MaxHeld) + `{"p":"/a","c":""}]`}, wantErr: "more than 64"},
		{name: "cleanup bad kind", args: []string{"cleanup", "--kind=x", "--mount-dir=/m", "--path=/m/a"}, wantErr: "--kind must be"},
		{name: "cleanup relative path", args: []string{"cleanup", "--kind=d", "--mount-dir=/m", "--path=a"}, wantErr: "must be absolute"},
		{name: "cleanup block without command", args: []string{"cleanup", "--kind=b", "--mount-dir=/m", "--path=/m/a"}, wantErr: "--command is required"},
		{name: "cleanup bad command", args: []string{"cleanup", "--kind=b", "--mount-dir=/m", "--path=/m/a", "--command=wipefs"}, wantErr: "--command is not a JSON list"},
		{name: "cleanup refused path", args: []string{"cleanup", "--kind=d", "--mount-dir=/m", "--path=/etc", "--disk-id=wwn:naa.1"}, wantErr: "not a direct child"},
		{name: "cleanup without disk id", args: []string{"cleanup", "--kind=d", "--mount-dir=/m", "--path=/m/a"}, wantErr: `--disk-id is required and must be a disk identity: ""`},
		{name: "cleanup bad disk id", args: []string{"cleanup", "--kind=d", "--mount-dir=/m", "--path=/m/a", "--disk-id=path:/dev/sdb"}, wantErr: "--disk-id is required and must be a disk identity"},
		{name: "cleanup machine id with a space", args: []string{"cleanup", "--kind=d", "--mount-dir=/m", "--path=/m/a", "--disk-id=wwn:naa.1", "--machine-id=a b"}, wantErr: "--machine-id must be printable ASCII"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			log := filepath.Join(t.TempDir(), "termination-log")
			err := runCommand(t, append(tc.args, "--termination-log="+log)...)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("want error containing %q, got %v", tc.wantErr, err)
			}
			b, _ := os.ReadFile(log)
			if !strings.Contains(string(b), tc.wantErr) {
				t.Fatalf("termination message %q lacks %q", b, tc.wantErr)
			}
		})
	}
}

// TestCleanupCommandIdentityMismatch runs the cleanup command as the Job
// does: on another machine it wipes nothing, writes the mismatch as its
// termination message and exits with 3.
func TestCleanupCommandIdentityMismatch(t *testing.T) {
	root := t.TempDir()
	vol := filepath.Join(root, "vol1")
	if err := os.MkdirAll(vol, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(vol, "data"), []byte("tenant"), 0o644); err != nil {
		t.Fatal(err)
	}
	machineID := filepath.Join(t.TempDir(), "machine-id")
	if err := os.WriteFile(machineID, []byte("bbbb\n"), 0o444); err != nil {
		t.Fatal(err)
	}
	log := filepath.Join(t.TempDir(), "termination-log")
	code := runExit(t, "cleanup", "--kind=d", "--mount-dir="+root, "--path="+vol, "--disk-id=wwn:naa.1",
		"--machine-id=aaaa", "--system-uuid=u-1", "--machine-id-file="+machineID,
		"--system-uuid-file="+filepath.Join(root, "missing"), "--termination-log="+log)
	if code != jobs.CleanupIdentityMismatchCode {
		t.Errorf("exit code %d, want %d", code, jobs.CleanupIdentityMismatchCode)
	}
	b, _ := os.ReadFile(log)
	if want := jobs.CleanupIdentityMismatch + "machine: recorded machine ID aaaa, found machine ID bbbb"; string(b) != want {
		t.Errorf("termination message %q, want %q", b, want)
	}
	if b, err := os.ReadFile(filepath.Join(vol, "data")); err != nil || string(b) != "tenant" {
		t.Errorf("volume touched: %q, %v", b, err)
	}
	// An ordinary failure still exits with 1.
	if code := runExit(t, "cleanup", "--kind=d", "--mount-dir="+root, "--path="+vol, "--disk-id=wwn:naa.1",
		"--termination-log="+log); code != 1 {
		t.Errorf("exit code of a failed cleanup %d, want 1", code)
	}
}

func runExit(t *testing.T, args ...string) int {
	t.Helper()
	if err := logsapi.ResetForTest(nil); err != nil {
		t.Fatal(err)
	}
	cmd := NewCommand()
	cmd.SetArgs(args)
	cmd.SetOut(&strings.Builder{})
	cmd.SetErr(&strings.Builder{})
	cmd.SetContext(t.Context())
	return Run(cmd)
}
