package report

import (
	"bytes"
	"compress/flate"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
)

const (
	// MaxMessageBytes is what the kubelet keeps of one container's
	// termination message.
	MaxMessageBytes = 4096
	// MaxPodMessageBytes is what the kubelet keeps of all of a pod's
	// termination messages together.
	MaxPodMessageBytes = 12 * 1024
	// MaxShards is the largest number of discovery containers per pod; with
	// it each container still gets MaxMessageBytes.
	MaxShards = MaxPodMessageBytes / MaxMessageBytes

	magic       = "lpv1"
	encJSON     = "j"
	encDeflate  = "z"
	digestChars = 16
	// headerRoom is reserved for "lpv1 z 0 3 <16 hex> ".
	headerRoom = 64
	// chunkBytes is the payload budget of one shard.
	chunkBytes = MaxMessageBytes - headerRoom
)

// ErrTooLarge is returned when a report does not fit in the shards.
var ErrTooLarge = errors.New("report does not fit in the termination messages")

// Encode returns the termination message of every shard. shards must be in
// [1, MaxShards]. When the report is too large, skipped-entry details and
// the disk inventory (but not its count) are dropped first; if it is still
// too large, ErrTooLarge is returned.
func Encode(r *Report, shards int) ([]string, error) {
	if shards < 1 || shards > MaxShards {
		return nil, fmt.Errorf("shards must be between 1 and %d, got %d", MaxShards, shards)
	}
	msgs, err := encode(r, shards)
	if !errors.Is(err, ErrTooLarge) {
		return msgs, err
	}
	trimmed := *r
	trimmed.Disks = nil
	trimmed.Classes = make([]Class, len(r.Classes))
	for i, c := range r.Classes {
		c.Skipped = nil
		trimmed.Classes[i] = c
	}
	return encode(&trimmed, shards)
}

func encode(r *Report, shards int) ([]string, error) {
	doc, err := json.Marshal(r)
	if err != nil {
		return nil, fmt.Errorf("failed to marshal report: %w", err)
	}
	sum := sha256.Sum256(doc)
	digest := hex.EncodeToString(sum[:])[:digestChars]
	enc, payload := encJSON, string(doc)
	if len(doc) > chunkBytes {
		var buf bytes.Buffer
		w, _ := flate.NewWriter(&buf, flate.BestCompression)
		if _, err := w.Write(doc); err != nil {
			return nil, fmt.Errorf("failed to compress report: %w", err)
		}
		if err := w.Close(); err != nil {
			return nil, fmt.Errorf("failed to compress report: %w", err)
		}
		enc, payload = encDeflate, base64.RawStdEncoding.EncodeToString(buf.Bytes())
	}
	if len(payload) > shards*chunkBytes {
		return nil, fmt.Errorf("%w: %d volumes need %d bytes, %d shards hold %d",
			ErrTooLarge, countVolumes(r), len(payload), shards, shards*chunkBytes)
	}
	msgs := make([]string, shards)
	for i := range shards {
		lo := min(i*chunkBytes, len(payload))
		hi := min(lo+chunkBytes, len(payload))
		msgs[i] = fmt.Sprintf("%s %s %d %d %s %s", magic, enc, i, shards, digest, payload[lo:hi])
	}
	return msgs, nil
}

func countVolumes(r *Report) int {
	n := 0
	for _, c := range r.Classes {
		n += len(c.Volumes)
	}
	return n
}
