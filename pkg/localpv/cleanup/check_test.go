package cleanup

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/klog/v2/ktesting"

	"github.com/nodeplug/nodeplug/pkg/localpv/jobs"
)

func TestCheckMachine(t *testing.T) {
	const id, uuid = "4b2f1c9e0a8d4e6fb1c2d3e4f5a6b7c8", "ec2a6c3e-1b2d-4f5a-9c8b-7d6e5f4a3b2c"
	tests := []struct {
		name string
		// files are the node's machine-id and product_uuid; "" means missing.
		machineFile, uuidFile string
		exp                   Expected
		// wantErr is the mismatch message, "" for none.
		wantErr string
	}{
		{name: "nothing recorded", exp: Expected{}},
		{name: "same machine", machineFile: id + "\n", uuidFile: uuid + "\n", exp: Expected{MachineID: id, SystemUUID: uuid}},
		{name: "UUID in upper case", machineFile: id, uuidFile: strings.ToUpper(uuid), exp: Expected{MachineID: id, SystemUUID: uuid}},
		{name: "other machine ID", machineFile: "0000000000000000000000000000beef", uuidFile: uuid, exp: Expected{MachineID: id, SystemUUID: uuid},
			wantErr: "machine: recorded machine ID " + id + ", found machine ID 0000000000000000000000000000beef"},
		{name: "other system UUID", machineFile: id, uuidFile: "ffffffff-1b2d-4f5a-9c8b-7d6e5f4a3b2c", exp: Expected{MachineID: id, SystemUUID: uuid},
			wantErr: "machine: recorded system UUID " + uuid + ", found system UUID ffffffff-"},
		{name: "unreadable UUID, machine ID decides", machineFile: id, exp: Expected{MachineID: id, SystemUUID: uuid}},
		{name: "unreadable UUID, other machine ID", machineFile: "beef", exp: Expected{MachineID: id, SystemUUID: uuid},
			wantErr: "found machine ID beef"},
		{name: "no machine ID file, UUID decides", uuidFile: uuid, exp: Expected{MachineID: id, SystemUUID: uuid}},
		{name: "neither readable", exp: Expected{MachineID: id, SystemUUID: uuid},
			wantErr: "machine: recorded machine ID " + id + " and system UUID " + uuid + ", found neither identity readable on the node: cannot prove the machine"},
		{name: "uninitialized machine ID only", machineFile: "uninitialized\n", exp: Expected{MachineID: id},
			wantErr: "cannot prove the machine"},
		{name: "empty machine ID file only", machineFile: "\n", exp: Expected{MachineID: id}, wantErr: "cannot prove the machine"},
		{name: "only a UUID recorded", machineFile: "beef", uuidFile: uuid, exp: Expected{SystemUUID: uuid}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			dir := t.TempDir()
			c := &NodeChecker{MachineIDFile: filepath.Join(dir, "machine-id"), SystemUUIDFile: filepath.Join(dir, "product_uuid")}
			for p, v := range map[string]string{c.MachineIDFile: tc.machineFile, c.SystemUUIDFile: tc.uuidFile} {
				if v != "" {
					if err := os.WriteFile(p, []byte(v), 0o400); err != nil {
						t.Fatal(err)
					}
				}
			}
			err := c.CheckMachine(ctx, tc.exp)
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("CheckMachine: %v", err)
				}
				return
			}
			var mm *MismatchError
			if !errors.As(err, &mm) || mm.What != jobs.CleanupMismatchMachine || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("want a machine mismatch containing %q, got %v", tc.wantErr, err)
			}
			if msg := mm.TerminationMessage(); !strings.HasPrefix(msg, jobs.CleanupIdentityMismatch+"machine: recorded ") {
				t.Errorf("termination message %q", msg)
			}
		})
	}
}
