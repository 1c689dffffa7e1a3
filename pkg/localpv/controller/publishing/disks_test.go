package publishing

import (
	"strings"
	"testing"
)

func TestDiskLabelValues(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{name: "plain", in: "ST4000NM0035-1V4", want: "ST4000NM0035-1V4"},
		{name: "spaces", in: "Samsung SSD 970 EVO Plus 1TB", want: "Samsung_SSD_970_EVO_Plus_1TB"},
		{name: "leading symbols", in: "  -WD-WCC4M1234567", want: "WD-WCC4M1234567"},
		{name: "too long", in: strings.Repeat("a", 70), want: strings.Repeat("a", 63)},
		{name: "nothing left", in: " / ", want: ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := labelValue(tc.in); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}
