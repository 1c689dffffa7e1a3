//go:build nodeplug_no_localpvcheck

package app

// newLocalPVCheck returns no design: nodeplug_no_localpvcheck leaves the
// local volume identity check and its flag out.
func newLocalPVCheck() *design { return nil }
