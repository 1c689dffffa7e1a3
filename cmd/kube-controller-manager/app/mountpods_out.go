//go:build nodeplug_no_mountpods

package app

// newMountPods returns no design: nodeplug_no_mountpods leaves flex
// drivers in mount pods and their flags out.
func newMountPods(*flexDrivers) *design { return nil }
