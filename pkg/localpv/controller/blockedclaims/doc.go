// Package blockedclaims is the master's policy writer: it writes the claims
// bound to PVs marked machine-replaced or disk-replaced into the
// blockedClaims variable of the replaced-machine ValidatingAdmissionPolicy,
// which refuses new pods that use them, and keeps the gauges of marked PVs
// and blocked claims. The variable's format is in pkg/localpv/README.md
// ("Machine identity"). The controller calls Writer.Sync from its queue
// whenever a marked PV or the policy changes.
package blockedclaims
