package config

import (
	"strings"
	"testing"
	"time"
)

func TestReleaseClaimsOfDeletedNodesAfter(t *testing.T) {
	tests := []struct {
		name    string
		value   string // the class's field; empty leaves it out
		want    time.Duration
		wantErr string
	}{
		{name: "absent is off", want: 0},
		{name: "zero number is off", value: "0", want: 0},
		{name: "zero string is off", value: `"0s"`, want: 0},
		{name: "minutes", value: "10m", want: 10 * time.Minute},
		{name: "the minimum", value: "1m", want: time.Minute},
		{name: "hours and minutes", value: "1h30m", want: 90 * time.Minute},
		{name: "below the minimum", value: "30s",
			wantErr: `storageClassMap[fast-disks].releaseClaimsOfDeletedNodesAfter: Invalid value: "30s": must be at least 1m0s`},
		{name: "negative", value: "-5m",
			wantErr: `storageClassMap[fast-disks].releaseClaimsOfDeletedNodesAfter: Invalid value: "-5m0s": must not be negative`},
		{name: "bare number", value: "600", wantErr: `a duration must be a string such as "10m" or "1h", not 600`},
		{name: "no unit", value: `"10"`, wantErr: `missing unit in duration "10"`},
		{name: "not a duration", value: "soon", wantErr: `invalid duration "soon"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			class := fastClass
			if tc.value != "" {
				class += "  releaseClaimsOfDeletedNodesAfter: " + tc.value + "\n"
			}
			cfg, _, err := Parse(classMap(class))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("want an error containing %q, got %v", tc.wantErr, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			got, on := cfg.StorageClassMap["fast-disks"].ReleasesClaimsOfDeletedNodes()
			if got != tc.want || on != (tc.want > 0) || cfg.ReleasesClaimsOfDeletedNodes() != on {
				t.Errorf("got %v (on %v, any class %v), want %v", got, on, cfg.ReleasesClaimsOfDeletedNodes(), tc.want)
			}
		})
	}
}

func TestDurationMarshalsAsString(t *testing.T) {
	b, err := Duration{90 * time.Second}.MarshalJSON()
	if err != nil || string(b) != `"1m30s"` {
		t.Fatalf("got %s, %v", b, err)
	}
	var d Duration
	if err := d.UnmarshalJSON(b); err != nil || d.Duration != 90*time.Second {
		t.Fatalf("round trip: %v, %v", d, err)
	}
}
