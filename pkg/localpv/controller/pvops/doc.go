// Package pvops is the master's executor of writes on its PVs that more
// than one role needs: deleting a PV with preconditions (counted in
// pvs_deleted_total), letting it go by removing the cleanup-protection
// finalizer, and warning on a PV's claim (an Event, and the claim's
// status.healthStatus where the apiserver serves it). Package pvopstest
// has a Fake that records the calls. Truncate, Unclaimed and Cleanable are
// the text bound and the PV states these writes go with.
package pvops
