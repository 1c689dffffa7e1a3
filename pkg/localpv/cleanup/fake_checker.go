package cleanup

import (
	"context"

	"github.com/nodeplug/nodeplug/pkg/localpv/identity"
)

// FakeChecker is a Checker for tests: it returns its errors and records
// what it was asked.
type FakeChecker struct {
	// MachineErr and DiskErr are returned by CheckMachine and CheckDisk.
	MachineErr, DiskErr error
	// Machines and Disks record the calls.
	Machines []Expected
	Disks    []Volume
}

var _ Checker = &FakeChecker{}

// CheckMachine records exp and returns MachineErr.
func (f *FakeChecker) CheckMachine(_ context.Context, exp Expected) error {
	f.Machines = append(f.Machines, exp)
	return f.MachineErr
}

// CheckDisk records vol and returns DiskErr.
func (f *FakeChecker) CheckDisk(_ context.Context, _ identity.ID, vol Volume) error {
	f.Disks = append(f.Disks, vol)
	return f.DiskErr
}
