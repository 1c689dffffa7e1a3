package report

import (
	"errors"
	"fmt"
)

// encMore marks a message that carries no report, only the number of shards
// the report needs: a discovery pod with too few containers asks for a run
// with more. Its payload is that number.
const encMore = "m"

// NeedShardsError is returned by Decode for messages that ask for a run with
// more shards.
type NeedShardsError struct {
	// Shards is the number of shards the report needs, in (got, MaxShards].
	Shards int
}

func (e *NeedShardsError) Error() string {
	return fmt.Sprintf("the report needs %d discovery containers", e.Shards)
}

// EncodeOrAsk is Encode, except that a report that does not fit in shards
// but fits in more yields, for every container, a message asking for that
// many. Starting discovery pods with one container is then cheap for the
// common node, and a node with many volumes costs one extra run.
func EncodeOrAsk(r *Report, shards int) ([]string, error) {
	msgs, err := Encode(r, shards)
	if !errors.Is(err, ErrTooLarge) {
		return msgs, err
	}
	for n := shards + 1; n <= MaxShards; n++ {
		if _, err := Encode(r, n); err == nil {
			msgs = make([]string, shards)
			for i := range msgs {
				msgs[i] = fmt.Sprintf("%s %s %d %d %016x %d", magic, encMore, i, shards, 0, n)
			}
			return msgs, nil
		}
	}
	return nil, err
}

// needShards interprets the messages of a run that asked for more shards.
func needShards(got int, payload string) error {
	n, err := smallInt(payload)
	if err != nil {
		return fmt.Errorf("%w: bad shard request: %w", ErrInvalid, err)
	}
	if n <= got || n > MaxShards {
		return fmt.Errorf("%w: a run with %d containers asked for %d, want %d to %d", ErrInvalid, got, n, got+1, MaxShards)
	}
	return &NeedShardsError{Shards: n}
}
