// Package cleanupjobs is the master's cleanup role: it drives one volume
// (the "vol/<volume-id>" key) from a released PV through its cleanup Jobs to
// the PV's deletion. The state machine lives in the PV's phase and the
// volume's cleanup Jobs, so it survives restarts: a Job per attempt,
// pinned to the node and carrying the PV's disk and machine identity; a
// failed attempt is retried after a backoff; a Job that found another
// machine or disk wipes nothing and is handled per the rules; a PV whose
// node was deleted and did not come back is dropped without a wipe; a held
// PV (a returned unwiped disk) gets a Job only once an admin asks for the
// wipe. Jobs have no TTL: a finished Job stays the lock of its path until
// this role has acted on its result, and the disk of a Job whose PV is gone
// is remembered as unwiped before anything else is done with the Job. This
// role is the only creator and the only deleter of cleanup Jobs. The Jobs are in
// pkg/localpv/README.md ("Cleanup Job").
package cleanupjobs
