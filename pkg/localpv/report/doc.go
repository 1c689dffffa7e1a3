// Package report defines what a discovery Job tells the master, and how it is
// carried in container termination messages.
//
// A Report is versioned JSON. The kubelet keeps at most 4096 bytes of each
// container's termination message, and 12 KiB per pod, split evenly between
// its containers. A discovery pod therefore runs up to MaxShards identical
// containers; each computes the same report and writes one shard of it:
//
//	lpv1 <encoding> <index> <total> <digest> <payload>
//
// encoding is "j" (the JSON itself, used when it fits in shard 0) or "z"
// (raw-deflate compressed, then unpadded standard base64). The payloads of
// shards 0..total-1 are concatenated before decoding. digest is the first 16
// hex characters of the SHA-256 of the JSON, so shards computed from
// different views of the disks are detected (ErrShardsDisagree) and the
// discovery is run again.
package report
