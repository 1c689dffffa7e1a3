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
	"io"
	"strconv"
	"strings"
)

const (
	// MaxDecodedBytes bounds the JSON after decompression, so a forged
	// message cannot expand into a memory bomb.
	MaxDecodedBytes = 1 << 20
	// MaxVolumes bounds the volumes of one report.
	MaxVolumes = 20000
	// MaxClasses bounds the classes of one report.
	MaxClasses = 256
)

// ErrInvalid wraps every decoding failure.
var ErrInvalid = errors.New("invalid discovery report")

// ErrShardsDisagree wraps ErrInvalid when well-formed shards carry different
// digests or encodings: each container scans on its own, so a disk that
// changed between their scans yields shards of different reports. That is a
// reason to run discovery again, not evidence of a lying node.
var ErrShardsDisagree = errors.New("shards come from different discovery runs")

type shard struct {
	enc, digest string
	index, n    int
	payload     string
}

// Decode reassembles and decodes the termination messages of one discovery
// pod, given in container order. It checks the framing, the digest and the
// structure of the report; what the report claims is checked by the caller.
func Decode(msgs []string) (*Report, error) {
	if len(msgs) < 1 || len(msgs) > MaxShards {
		return nil, fmt.Errorf("%w: %d messages, want 1 to %d", ErrInvalid, len(msgs), MaxShards)
	}
	var payload strings.Builder
	var first shard
	for i, m := range msgs {
		s, err := parseShard(m)
		if err != nil {
			return nil, fmt.Errorf("%w: message %d: %w", ErrInvalid, i, err)
		}
		if i == 0 {
			first = s
		}
		switch {
		case s.index != i:
			return nil, fmt.Errorf("%w: message %d claims index %d", ErrInvalid, i, s.index)
		case s.n != len(msgs):
			return nil, fmt.Errorf("%w: message %d claims %d shards, got %d", ErrInvalid, i, s.n, len(msgs))
		case s.enc != first.enc || s.digest != first.digest:
			return nil, fmt.Errorf("%w: %w", ErrInvalid, ErrShardsDisagree)
		}
		payload.WriteString(s.payload)
	}
	if first.enc == encMore {
		return nil, needShards(len(msgs), first.payload)
	}
	doc, err := unwrap(first.enc, payload.String())
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	sum := sha256.Sum256(doc)
	if hex.EncodeToString(sum[:])[:digestChars] != first.digest {
		return nil, fmt.Errorf("%w: digest mismatch", ErrInvalid)
	}
	r, err := unmarshal(doc)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	return r, nil
}

func parseShard(m string) (shard, error) {
	if len(m) > MaxMessageBytes {
		return shard{}, fmt.Errorf("message is %d bytes, longer than %d", len(m), MaxMessageBytes)
	}
	f := strings.SplitN(m, " ", 6)
	if len(f) != 6 || f[0] != magic {
		return shard{}, fmt.Errorf("not a %s message", magic)
	}
	s := shard{enc: f[1], digest: f[4], payload: f[5]}
	var err error
	if s.index, err = smallInt(f[2]); err != nil {
		return shard{}, fmt.Errorf("bad index: %w", err)
	}
	if s.n, err = smallInt(f[3]); err != nil {
		return shard{}, fmt.Errorf("bad shard count: %w", err)
	}
	if s.enc != encJSON && s.enc != encDeflate && s.enc != encMore {
		return shard{}, fmt.Errorf("unknown encoding %q", s.enc)
	}
	if len(s.digest) != digestChars || strings.Trim(s.digest, "0123456789abcdef") != "" {
		return shard{}, fmt.Errorf("bad digest %q", s.digest)
	}
	return s, nil
}

func smallInt(s string) (int, error) {
	if len(s) != 1 || s[0] < '0' || s[0] > '9' {
		return 0, fmt.Errorf("%q is not a digit", s)
	}
	return strconv.Atoi(s)
}

func unwrap(enc, payload string) ([]byte, error) {
	if enc == encJSON {
		return []byte(payload), nil
	}
	raw, err := base64.RawStdEncoding.Strict().DecodeString(payload)
	if err != nil {
		return nil, fmt.Errorf("bad base64: %w", err)
	}
	r := flate.NewReader(bytes.NewReader(raw))
	defer func() { _ = r.Close() }()
	doc, err := io.ReadAll(io.LimitReader(r, MaxDecodedBytes+1))
	if err != nil {
		return nil, fmt.Errorf("bad compressed data: %w", err)
	}
	if len(doc) > MaxDecodedBytes {
		return nil, fmt.Errorf("decompressed report exceeds %d bytes", MaxDecodedBytes)
	}
	return doc, nil
}

func unmarshal(doc []byte) (*Report, error) {
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.DisallowUnknownFields()
	r := &Report{}
	if err := dec.Decode(r); err != nil {
		return nil, fmt.Errorf("bad JSON: %w", err)
	}
	if dec.More() {
		return nil, errors.New("trailing data after JSON")
	}
	if r.Version != Version {
		return nil, fmt.Errorf("unsupported version %d", r.Version)
	}
	if r.Node == "" {
		return nil, errors.New("node is empty")
	}
	if len(r.Classes) > MaxClasses {
		return nil, fmt.Errorf("%d classes exceed %d", len(r.Classes), MaxClasses)
	}
	total := 0
	for _, c := range r.Classes {
		total += len(c.Volumes) + len(c.Skipped)
		if len(c.Skipped) > MaxSkipped {
			return nil, fmt.Errorf("class %q lists %d skipped entries, more than %d", c.Name, len(c.Skipped), MaxSkipped)
		}
	}
	if total > MaxVolumes {
		return nil, fmt.Errorf("%d entries exceed %d", total, MaxVolumes)
	}
	if err := checkDisks(r); err != nil {
		return nil, err
	}
	return r, nil
}
