package driver

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// ParseResponse parses one driver status object. Leading and trailing white
// space is ignored; anything else that is not exactly one JSON object with a
// known status is ErrInvalidOutput. Capabilities the object omits keep their
// defaults, and a missing or null "capabilities" gives DefaultCapabilities.
// Key matching is case-insensitive, as it always was for drivers.
//
// A "Failure" or "Not supported" status is returned as a Response, not as an
// error; Driver calls turn it into ErrFailure or ErrNotSupported.
func ParseResponse(out []byte) (*Response, error) {
	trimmed := bytes.TrimSpace(out)
	if len(trimmed) == 0 {
		return nil, fmt.Errorf("%w: no output", ErrInvalidOutput)
	}
	if trimmed[0] != '{' {
		return nil, fmt.Errorf("%w: output does not start with a JSON object", ErrInvalidOutput)
	}
	caps := DefaultCapabilities()
	r := Response{Capabilities: &caps}
	if err := json.Unmarshal(trimmed, &r); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidOutput, err)
	}
	if r.Capabilities == nil {
		d := DefaultCapabilities()
		r.Capabilities = &d
	}
	switch r.Status {
	case StatusSuccess, StatusFailure, StatusNotSupported:
		return &r, nil
	default:
		return nil, fmt.Errorf("%w: unknown status %q", ErrInvalidOutput, r.Status)
	}
}
