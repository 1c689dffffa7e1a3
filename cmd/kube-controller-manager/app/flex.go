package app

// nodeplugFlexProber returns the ProberFactory for
// --experimental-flexvolume-discovery. Until nodeplug's prober is wired in,
// it is upstream's, one per controller.
func nodeplugFlexProber() ProberFactory { return nil }
