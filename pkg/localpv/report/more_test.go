package report

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
)

func TestEncodeOrAsk(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	uuids := func(n int) *Report { return makeReport(n, func(int) string { return uuidName(rng) }) }
	tests := []struct {
		name       string
		report     *Report
		shards     int
		wantAsk    int // 0: the report itself
		wantTooBig bool
	}{
		{name: "fits in one container", report: makeReport(3, func(i int) string { return fmt.Sprintf("v%d", i) }), shards: 1},
		{name: "200 uuid names ask one container for more", report: uuids(200), shards: 1, wantAsk: 2},
		{name: "400 uuid names ask one container for three", report: uuids(400), shards: 1, wantAsk: 3},
		{name: "400 uuid names fit three containers", report: uuids(400), shards: 3},
		{name: "too large for any number of containers", report: uuids(2000), shards: 1, wantTooBig: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			msgs, err := EncodeOrAsk(tc.report, tc.shards)
			if tc.wantTooBig {
				if !errors.Is(err, ErrTooLarge) {
					t.Fatalf("EncodeOrAsk error = %v, want ErrTooLarge", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("EncodeOrAsk: %v", err)
			}
			if len(msgs) != tc.shards {
				t.Fatalf("got %d messages, want one per container (%d)", len(msgs), tc.shards)
			}
			_, err = Decode(msgs)
			var need *NeedShardsError
			switch {
			case tc.wantAsk == 0 && err != nil:
				t.Fatalf("Decode: %v", err)
			case tc.wantAsk != 0 && !errors.As(err, &need):
				t.Fatalf("Decode error = %v, want a NeedShardsError", err)
			case tc.wantAsk != 0 && need.Shards != tc.wantAsk:
				t.Fatalf("asked for %d containers, want %d", need.Shards, tc.wantAsk)
			}
		})
	}
}

// TestDecodeRejectsBadShardRequests: a node cannot make the master loop or
// grow pods beyond MaxShards by asking for shards.
func TestDecodeRejectsBadShardRequests(t *testing.T) {
	ask := func(index, total int, n string) string {
		return fmt.Sprintf("lpv1 m %d %d 0000000000000000 %s", index, total, n)
	}
	tests := []struct {
		name string
		msgs []string
	}{
		{name: "asks for as many as it had", msgs: []string{ask(0, 2, "2"), ask(1, 2, "2")}},
		{name: "asks for fewer", msgs: []string{ask(0, 2, "1"), ask(1, 2, "1")}},
		{name: "asks for more than the maximum", msgs: []string{ask(0, 1, "4")}},
		{name: "not a number", msgs: []string{ask(0, 1, "x")}},
		{name: "request mixed with a report", msgs: []string{ask(0, 2, "3"), "lpv1 j 1 2 0000000000000000 {}"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Decode(tc.msgs)
			var need *NeedShardsError
			if errors.As(err, &need) || !errors.Is(err, ErrInvalid) {
				t.Fatalf("Decode error = %v, want ErrInvalid", err)
			}
		})
	}
}
