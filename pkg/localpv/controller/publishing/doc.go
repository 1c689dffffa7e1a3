// Package publishing is the master's publishing role: it turns the
// accepted volumes of a discovery report into PVs, one per disk. A disk is
// matched by what it is (its identity), not by its path: a path that leads
// to another disk than its PV's marks or drops that PV, a disk of a replaced
// machine's PV is handed over or dropped, a disk already behind a PV (the
// master's or anyone's; as a whole disk, one of its partitions, or the
// device of a directory's file system, see once.go) is never published
// again, a new block device in use is not published, and nothing is
// published while a cleanup of the path has not succeeded; a disk
// remembered as unwiped gets a held PV, which no claim binds and nothing
// wipes until an admin says so. Publishing creates no Job. It also deletes
// or marks the PVs whose
// volumes the report no longer lists. The rules are in
// pkg/localpv/README.md ("PVs", "Disk identity").
package publishing
