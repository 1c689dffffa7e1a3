package report

import (
	"bytes"
	"compress/flate"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
)

// uuidName returns a random-looking UUID, the worst case for compression and
// the naming scheme recommended to users.
func uuidName(rng *rand.Rand) string {
	b := make([]byte, 16)
	for i := range b {
		b[i] = byte(rng.IntN(256))
	}
	h := hex.EncodeToString(b)
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

func makeReport(n int, name func(i int) string) *Report {
	c := Class{Name: "fast-disks"}
	for i := range n {
		c.Volumes = append(c.Volumes, Volume{Name: name(i), Kind: KindDirectory, Capacity: 375 << 30})
	}
	return &Report{Version: Version, Node: "node-1.example.internal", Classes: []Class{c}}
}

func TestRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	tests := []struct {
		name       string
		report     *Report
		shards     int
		wantEnc    string
		wantShards int // shards holding payload
	}{
		{name: "small report stays readable JSON", report: makeReport(3, func(i int) string { return fmt.Sprintf("vol%d", i) }), shards: 1, wantEnc: "j"},
		{name: "200 sequential names in one message", report: makeReport(200, func(i int) string { return fmt.Sprintf("disk-%03d", i) }), shards: 1, wantEnc: "z"},
		{name: "200 uuid names in three messages", report: makeReport(200, func(int) string { return uuidName(rng) }), shards: 3, wantEnc: "z"},
		{name: "400 uuid names in three messages", report: makeReport(400, func(int) string { return uuidName(rng) }), shards: 3, wantEnc: "z"},
		{name: "empty report", report: &Report{Version: Version, Node: "n", Classes: []Class{{Name: "a", Error: "no such directory"}}}, shards: 3, wantEnc: "j"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			msgs, err := Encode(tc.report, tc.shards)
			if err != nil {
				t.Fatalf("Encode: %v", err)
			}
			total := 0
			for i, m := range msgs {
				if len(m) > MaxMessageBytes {
					t.Fatalf("message %d is %d bytes", i, len(m))
				}
				if !strings.HasPrefix(m, "lpv1 "+tc.wantEnc+" ") {
					t.Fatalf("message %d has unexpected header %.30q", i, m)
				}
				total += len(m)
			}
			if total > MaxPodMessageBytes {
				t.Fatalf("messages total %d bytes", total)
			}
			got, err := Decode(msgs)
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			if !reflect.DeepEqual(got, tc.report) {
				t.Fatalf("round trip changed the report")
			}
		})
	}
}

func TestEncodeDropsSkippedDetailsBeforeFailing(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	r := makeReport(180, func(int) string { return uuidName(rng) })
	for range MaxSkipped {
		r.Classes[0].Skipped = append(r.Classes[0].Skipped, Skipped{Name: uuidName(rng), Reason: "NotMountPoint"})
	}
	r.Classes[0].SkippedTotal = 1000
	msgs, err := Encode(r, 2)
	if err != nil {
		t.Fatalf("Encode: %v", err)
	}
	got, err := Decode(msgs)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Classes[0].Volumes) != 180 || got.Classes[0].SkippedTotal != 1000 {
		t.Fatalf("volumes or skipped count lost: %d %d", len(got.Classes[0].Volumes), got.Classes[0].SkippedTotal)
	}
	if _, err := Encode(makeReport(2000, func(int) string { return uuidName(rng) }), 3); err == nil {
		t.Fatal("2000 uuid volumes must not fit")
	}
}

func TestEncodeRejectsBadShardCount(t *testing.T) {
	for _, n := range []int{0, 4} {
		if _, err := Encode(makeReport(1, func(int) string { return "a" }), n); err == nil {
			t.Errorf("shards=%d accepted", n)
		}
	}
}

func header(enc string, i, n int, doc []byte) string {
	s := sha256.Sum256(doc)
	return fmt.Sprintf("lpv1 %s %d %d %s ", enc, i, n, hex.EncodeToString(s[:])[:16])
}

func deflated(doc []byte) string {
	var b bytes.Buffer
	w, _ := flate.NewWriter(&b, 9)
	_, _ = w.Write(doc)
	_ = w.Close()
	return base64.RawStdEncoding.EncodeToString(b.Bytes())
}

func TestDecodeRejects(t *testing.T) {
	good, err := Encode(makeReport(2, func(i int) string { return fmt.Sprintf("v%d", i) }), 2)
	if err != nil {
		t.Fatal(err)
	}
	other, _ := Encode(makeReport(3, func(i int) string { return fmt.Sprintf("v%d", i) }), 2)
	bomb := bytes.Repeat([]byte(" "), MaxDecodedBytes+10)
	jsonMsg := func(doc string) []string { return []string{header("j", 0, 1, []byte(doc)) + doc} }
	tests := []struct {
		name    string
		msgs    []string
		wantErr string
	}{
		{name: "no messages", msgs: nil, wantErr: "0 messages"},
		{name: "too many messages", msgs: []string{good[0], good[1], good[1], good[1]}, wantErr: "4 messages"},
		{name: "not a report", msgs: []string{"panic: runtime error"}, wantErr: "not a lpv1 message"},
		{name: "message too long", msgs: []string{good[0] + strings.Repeat("x", MaxMessageBytes)}, wantErr: "longer than 4096"},
		{name: "shards swapped", msgs: []string{good[1], good[0]}, wantErr: "claims index 1"},
		{name: "shard missing", msgs: good[:1], wantErr: "claims 2 shards"},
		{name: "shards of different runs", msgs: []string{good[0], other[1]}, wantErr: "different discovery runs"},
		{name: "unknown encoding", msgs: []string{strings.Replace(good[0], " j ", " q ", 1), good[1]}, wantErr: `unknown encoding "q"`},
		{name: "bad digest", msgs: []string{"lpv1 j 0 1 XYZ {}"}, wantErr: "bad digest"},
		{name: "multi digit index", msgs: []string{"lpv1 j 00 1 0123456789abcdef {}"}, wantErr: "bad index"},
		{name: "digest mismatch", msgs: []string{"lpv1 j 0 1 0123456789abcdef {}"}, wantErr: "digest mismatch"},
		{name: "tail truncated by kubelet", msgs: []string{good[0][10:], good[1]}, wantErr: "not a lpv1 message"},
		{name: "bad base64", msgs: []string{header("z", 0, 1, nil) + "!!!!"}, wantErr: "bad base64"},
		{name: "bad deflate", msgs: []string{header("z", 0, 1, nil) + base64.RawStdEncoding.EncodeToString([]byte("not deflate"))}, wantErr: "bad compressed data"},
		{name: "decompression bomb", msgs: []string{header("z", 0, 1, bomb) + deflated(bomb)}, wantErr: "exceeds"},
		{name: "unknown field", msgs: jsonMsg(`{"v":1,"node":"n","classes":[],"evil":1}`), wantErr: "unknown field"},
		{name: "trailing data", msgs: jsonMsg(`{"v":1,"node":"n","classes":[]} {}`), wantErr: "trailing data"},
		{name: "wrong version", msgs: jsonMsg(`{"v":2,"node":"n","classes":[]}`), wantErr: "unsupported version 2"},
		{name: "no node", msgs: jsonMsg(`{"v":1,"node":"","classes":[]}`), wantErr: "node is empty"},
		{name: "wrong types", msgs: jsonMsg(`{"v":1,"node":"n","classes":[{"name":"a","volumes":[{"n":"x","k":"d","c":"big"}]}]}`), wantErr: "bad JSON"},
		{name: "too many skipped", msgs: jsonMsg(`{"v":1,"node":"n","classes":[{"name":"a","skipped":[` + strings.TrimSuffix(strings.Repeat(`{"n":"x","r":"y"},`, 17), ",") + `]}]}`), wantErr: "skipped entries"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Decode(tc.msgs)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("want error containing %q, got %v", tc.wantErr, err)
			}
		})
	}
}

func FuzzDecode(f *testing.F) {
	msgs, _ := Encode(makeReport(5, func(i int) string { return fmt.Sprintf("v%d", i) }), 1)
	f.Add(msgs[0])
	rng := rand.New(rand.NewPCG(5, 6))
	big, _ := Encode(makeReport(60, func(int) string { return uuidName(rng) }), 1)
	f.Add(big[0])
	f.Add("lpv1 z 0 1 0123456789abcdef AAAA")
	f.Fuzz(func(t *testing.T, m string) {
		r, err := Decode([]string{m})
		if err == nil && (r == nil || r.Version != Version || r.Node == "") {
			t.Fatalf("accepted a structurally invalid report: %+v", r)
		}
	})
}

func BenchmarkEncodeDecode200UUIDs(b *testing.B) {
	rng := rand.New(rand.NewPCG(7, 8))
	r := makeReport(200, func(int) string { return uuidName(rng) })
	for b.Loop() {
		msgs, err := Encode(r, 3)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := Decode(msgs); err != nil {
			b.Fatal(err)
		}
	}
}

func TestDecodeShardsOfDifferentScansAreRetriable(t *testing.T) {
	before, _ := Encode(makeReport(2, func(i int) string { return fmt.Sprintf("v%d", i) }), 3)
	rng := rand.New(rand.NewPCG(9, 10))
	after, _ := Encode(makeReport(200, func(int) string { return uuidName(rng) }), 3)
	tests := []struct {
		name      string
		msgs      []string
		retriable bool
	}{
		{name: "a disk appeared after shard 0 was scanned", msgs: []string{before[0], after[1], after[2]}, retriable: true},
		{name: "a disk vanished before the last shard was scanned", msgs: []string{after[0], after[1], before[2]}, retriable: true},
		{name: "shards agree but the payload does not match", msgs: []string{"lpv1 j 0 1 0123456789abcdef {}"}},
		{name: "garbage", msgs: []string{"panic: runtime error"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Decode(tc.msgs)
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("want ErrInvalid, got %v", err)
			}
			if got := errors.Is(err, ErrShardsDisagree); got != tc.retriable {
				t.Fatalf("errors.Is(ErrShardsDisagree) = %v, want %v (%v)", got, tc.retriable, err)
			}
		})
	}
}
