// Package naming derives the deterministic names of the provisioner's PVs and
// Jobs. Names hash length-prefixed fields with SHA-256 and keep 80 bits, so
// that two different inputs never concatenate to the same bytes and a
// cluster-wide collision needs about 10^12 volumes to become likely (the
// upstream provisioner kept 32 bits and collides at 10^4 to 10^5 volumes).
package naming
