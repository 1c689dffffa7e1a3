// Package machine is the master's machine-identity role. Identity is what
// a Node's status says of the machine behind its name (machine ID and
// system UUID) and what a PV records of the machine it was published for;
// Checker compares the two for every PV of a node: it adopts PVs that
// record no machine, deletes the unused PVs of a replaced machine, and
// marks the used ones (and unmarks them when the machines match again).
// What a path of the new machine leads to is not its business: publishing
// decides that from a discovery report. The rules are in
// pkg/localpv/README.md ("Machine identity").
package machine
