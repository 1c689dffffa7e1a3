//go:build nodeplug_no_flexdiscovery && nodeplug_no_mountpods

package app

// flexDrivers stands in for nodeplug's flexvolume probers (flex.go) when
// neither design that uses them is compiled in.
type flexDrivers struct{}

func newFlexDrivers() *flexDrivers { return nil }

// design returns nothing: no design runs flexvolume drivers.
func (*flexDrivers) design() *design { return nil }
