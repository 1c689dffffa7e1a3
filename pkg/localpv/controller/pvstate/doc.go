// Package pvstate is the only writer of the master's marks on its PVs:
// missing, disk-replaced, machine-replaced, node-gone, held, the recorded
// machine and the recorded disk identity. Each change is a named
// Transition; a Writer applies one to a PV with an Update, and writes
// nothing when the PV is already in the state the transition leads to.
// The roles decide when a transition happens and what they tell (Events,
// claim health); this package decides what each one writes. Deleting PVs
// and their finalizer is package pvops; creating them is the publishing
// role. The marks are in pkg/localpv/README.md ("PV states").
package pvstate
