package designs

import (
	"errors"
	"slices"
	"testing"

	"github.com/spf13/pflag"
)

type start func() string

func TestList(t *testing.T) {
	cases := map[string]struct {
		args        []string
		wantEnabled []string
		wantStarts  []string
		wantErrs    int
	}{
		"nothing set":           {},
		"switch on":             {args: []string{"--experimental-a"}, wantEnabled: []string{"a"}, wantStarts: []string{"part"}},
		"value design":          {args: []string{"--experimental-b=x"}, wantEnabled: []string{"b"}, wantStarts: []string{"b", "part"}},
		"both":                  {args: []string{"--experimental-a", "--experimental-b=x"}, wantEnabled: []string{"a", "b"}, wantStarts: []string{"b", "part"}},
		"invalid value":         {args: []string{"--experimental-b=bad"}, wantEnabled: []string{"b"}, wantStarts: []string{"b", "part"}, wantErrs: 1},
		"part's flag alone off": {args: []string{"--experimental-part=1"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			l := newTestList()
			fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
			l.AddFlags(fs)
			if err := fs.Parse(tc.args); err != nil {
				t.Fatal(err)
			}
			if got := l.Names(); !slices.Equal(got, []string{"a", "b"}) {
				t.Errorf("Names() = %v, want [a b]: left-out designs and parts unnamed", got)
			}
			if got := l.EnabledNames(); !slices.Equal(got, tc.wantEnabled) || l.Enabled() != (len(tc.wantEnabled) > 0) {
				t.Errorf("EnabledNames() = %v, Enabled() = %v; want %v", got, l.Enabled(), tc.wantEnabled)
			}
			var starts []string
			for _, s := range l.Starts() {
				if s != nil {
					starts = append(starts, s())
				}
			}
			if !slices.Equal(starts, tc.wantStarts) {
				t.Errorf("start hooks run: %v, want %v", starts, tc.wantStarts)
			}
			if errs := l.Validate("arg"); len(errs) != tc.wantErrs {
				t.Errorf("Validate() = %v, want %d errors", errs, tc.wantErrs)
			}
		})
	}
}

func TestVersionLine(t *testing.T) {
	cases := map[string]struct {
		list *List[start]
		want string
	}{
		"every design": {list: newTestList(), want: "nodeplug designs: a,b"},
		"none":         {list: NewList[start](nil, nil), want: "nodeplug designs: none"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := tc.list.VersionLine(); got != tc.want {
				t.Errorf("VersionLine() = %q, want %q", got, tc.want)
			}
			if tc.list.HasFlags() != (tc.want != "nodeplug designs: none") {
				t.Errorf("HasFlags() = %v", tc.list.HasFlags())
			}
		})
	}
}

// newTestList: a switch design "a", a design "b" with a value, a design
// left out (nil), and an unnamed part that either starts.
func newTestList() *List[start] {
	var part Switches
	a := Switch[start]("a", "experimental-a", "a", &part)
	var value string
	part.Add(func() bool { return value != "" })
	b := &Design[start]{
		Name:     "b",
		AddFlags: func(fs *pflag.FlagSet) { fs.StringVar(&value, "experimental-b", "", "b") },
		Validate: func(string) []error {
			if value == "bad" {
				return []error{errors.New("bad b")}
			}
			return nil
		},
		Enabled: func() bool { return value != "" },
		Start:   func() string { return "b" },
	}
	var n int
	p := Part(func(fs *pflag.FlagSet) { fs.IntVar(&n, "experimental-part", 0, "part") },
		func() []error { return nil }, &part, start(func() string { return "part" }))
	return NewList(a, nil, b, p)
}
