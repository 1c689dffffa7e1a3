package cleanup

import (
	"context"

	"github.com/nodeplug/nodeplug/pkg/localpv/identity"
)

// fakeChecker is a Checker for this package's tests: it returns its
// errors and records what it was asked.
type fakeChecker struct {
	// MachineErr and DiskErr are returned by CheckMachine and CheckDisk.
	MachineErr, DiskErr error
	// Machines and Disks record the calls.
	Machines []Expected
	Disks    []Volume
}

var _ Checker = &fakeChecker{}

// CheckMachine records exp and returns MachineErr.
func (f *fakeChecker) CheckMachine(_ context.Context, exp Expected) error {
	f.Machines = append(f.Machines, exp)
	return f.MachineErr
}

// CheckDisk records vol and returns DiskErr.
func (f *fakeChecker) CheckDisk(_ context.Context, _ identity.ID, vol Volume) error {
	f.Disks = append(f.Disks, vol)
	return f.DiskErr
}
