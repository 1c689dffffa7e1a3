// Package nodecleanup releases the bound claims of PVs whose Node was
// deleted and did not come back, so that a StatefulSet's pod, stuck Pending
// on a PV pinned to a node that no longer exists, gets a new claim and runs
// on another node's PV.
//
// It is part of the master and runs on the leader only. It acts per class,
// only for classes that set releaseClaimsOfDeletedNodesAfter, and only after
// that delay has passed since the Node was seen deleted. Before it deletes
// anything it asks the apiserver (not its cache) whether the Node is back;
// a Node that comes back within the delay loses nothing.
//
// For each Bound PV of such a class on the node, whose claim still exists
// with the claimRef's UID, was created before the Node was deleted and was
// bound before then too (a fresh claim or a fresh binding is never undone),
// it:
//
//  1. annotates the PV localpv.nodeplug.io/node-gone-since, so that no
//     cleanup Job is ever created for it;
//  2. asks the apiserver again whether the Node is back, and if it is back
//     on the same machine, removes the annotation and stops;
//  3. puts Warning Events on the claim and on the pods that use it (found
//     with GETs only: the claim's owner pod, and the StatefulSet pod its name
//     belongs to);
//  4. deletes the claim with a UID precondition;
//  5. removes the master's cleanup-protection finalizer from the PV and
//     deletes it without a wipe: its disk left with its machine. A Retain
//     PV is kept, Released, as its policy asks.
//
// The master's own cleanup (package controller) drops a released PV that
// carries the annotation without a wipe as well, unless its Node is back on
// the same machine.
package nodecleanup
