package main

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func fixture(t *testing.T) string {
	t.Helper()
	src, err := os.ReadFile(filepath.Join("testdata", "fixture.go"))
	if err != nil {
		t.Fatalf("reading the fixture: %v", err)
	}
	return string(src)
}

func mustHash(t *testing.T, src, symbol string) string {
	t.Helper()
	h, err := hashSymbol("fixture.go", []byte(src), symbol)
	if err != nil {
		t.Fatalf("hash of %s: %v", symbol, err)
	}
	if len(h) != hashLen {
		t.Fatalf("hash of %s is %q, want %d hex digits", symbol, h, hashLen)
	}
	return h
}

// replace is strings.Replace that fails the test when old is not in s, so
// that a variant cannot silently equal the fixture.
func replace(t *testing.T, s, old, new string) string {
	t.Helper()
	if !strings.Contains(s, old) {
		t.Fatalf("fixture has no %q", old)
	}
	return strings.Replace(s, old, new, 1)
}

var symbols = []string{"Join", "plugin.Init", "Handler.Name", "Set.Has", "Handler", "plugin", "Set", "defaultName", "otherName", "registry", "group:defaultName"}

func TestSameDeclarationSameHash(t *testing.T) {
	src := fixture(t)
	seen := map[string]string{}
	for _, sym := range symbols {
		h := mustHash(t, src, sym)
		if again := mustHash(t, src, sym); again != h {
			t.Errorf("%s: hash not deterministic: %s then %s", sym, h, again)
		}
		if other, dup := seen[h]; dup && sym != "defaultName" && sym != "otherName" {
			t.Errorf("%s and %s have the same hash %s", sym, other, h)
		}
		seen[h] = sym
	}
	// Code added elsewhere in the file moves the declarations but does not
	// change them.
	moved := replace(t, src, "var registry", "func Unrelated() int { return 1 }\n\nvar registry")
	for _, sym := range symbols {
		if a, b := mustHash(t, src, sym), mustHash(t, moved, sym); a != b {
			t.Errorf("%s: hash changed when other code was added to the file: %s -> %s", sym, a, b)
		}
	}
}

// TestLayoutAndCommentsIgnored documents the normalisation: comments (doc
// comments included) and layout are not part of the hash.
func TestLayoutAndCommentsIgnored(t *testing.T) {
	src := fixture(t)
	tests := []struct {
		name, symbol, old, new string
	}{
		{"doc comment edited", "Join", "// Join joins parts.", "// Join joins the parts with sep.\n// It is a fixture."},
		{"doc comment removed", "plugin.Init", "// Init sets the handler's plugin.\n", ""},
		{"comment inside the body", "Join", "return strings.Join", "// Not empty here.\n\treturn /* joined */ strings.Join"},
		{"blank lines", "Join", "\t\treturn \"\"\n\t}\n", "\t\treturn \"\"\n\t}\n\n\n"},
		{"spacing and line breaks", "Join", "strings.Join(parts, sep)", "strings.Join(\n\t\tparts,\n\t\tsep,\n\t)"},
		{"one-line body spread out", "Handler.Name", "{ return h.plugin.name }", "{\n\treturn h.plugin.name\n}"},
		{"explicit semicolon", "plugin.Init", "h.plugin = p\n", "h.plugin = p;\n"},
		{"field comment", "Handler", "plugin *plugin\n", "plugin *plugin // set by Init\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			variant := replace(t, src, tc.old, tc.new)
			if a, b := mustHash(t, src, tc.symbol), mustHash(t, variant, tc.symbol); a != b {
				t.Errorf("%s: hash changed (%s -> %s), want layout and comments ignored", tc.symbol, a, b)
			}
		})
	}
}

func TestChangeDetected(t *testing.T) {
	src := fixture(t)
	tests := []struct {
		name, symbol, old, new string
	}{
		{"statement changed", "Join", "len(parts) == 0", "len(parts) < 2"},
		{"string literal changed", "Join", `return ""`, `return "-"`},
		{"parameter renamed", "Join", "sep string) string {", "separator string) string {"},
		{"signature changed", "plugin.Init", "Init(h *Handler) error", "Init(h *Handler, _ int) error"},
		{"receiver made a value", "plugin.Init", "func (p *plugin) Init", "func (p plugin) Init"},
		{"field renamed", "Handler", "plugin *plugin\n", "csiPlugin *plugin\n"},
		{"field type changed", "Handler", "plugin *plugin\n", "plugin plugin\n"},
		{"constant value changed", "defaultName", `"ext4"`, `"ext3"`},
		{"variable changed", "registry", "map[string]int{}", "map[string]int64{}"},
		{"generic method changed", "Set.Has", "_, ok := s[v]", "_, ok := s[v]; ok = !ok"},
		{"constant added to the group", "group:defaultName", "otherName   = \"xfs\"\n", "otherName   = \"xfs\"\n\tthirdName   = \"btrfs\"\n"},
		{"other constant of the group changed", "group:defaultName", `"xfs"`, `"vfat"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			variant := replace(t, src, tc.old, tc.new)
			if a, b := mustHash(t, src, tc.symbol), mustHash(t, variant, tc.symbol); a == b {
				t.Errorf("%s: hash %s unchanged after %s", tc.symbol, a, tc.name)
			}
		})
	}
}

func TestRenamedOrMissing(t *testing.T) {
	src := fixture(t)
	renamed := replace(t, src, "func Join(", "func JoinAll(")
	if _, err := hashSymbol("fixture.go", []byte(renamed), "Join"); !errors.Is(err, errNotFound) {
		t.Errorf("renamed function: err = %v, want errNotFound", err)
	}
	for _, sym := range []string{"Name", "plugin.Name", "Handler.Init", "Missing", "Set.Missing", "group:Join", "group:Missing"} {
		if _, err := hashSymbol("fixture.go", []byte(src), sym); !errors.Is(err, errNotFound) {
			t.Errorf("%s: err = %v, want errNotFound", sym, err)
		}
	}
	if _, err := hashSymbol("fixture.go", []byte("package x\nfunc {"), "x"); err == nil || errors.Is(err, errNotFound) {
		t.Errorf("unparsable source: err = %v, want a parse error", err)
	}
}

// fakeModule writes files into a fake module directory.
func fakeModule(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, src := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestCheckAndUpdate(t *testing.T) {
	src := fixture(t)
	old := fakeModule(t, map[string]string{"pkg/a/a.go": src})
	listFile := filepath.Join(t.TempDir(), "list.txt")
	listText := "# header kept\n" +
		"copy example.com/up@v1.0.0 pkg/a/a.go Join - cmd/x.go:join\n" +
		"\n" +
		"relies example.com/up@v1.0.0 pkg/a/a.go Handler - pkg/y.go:reflect\n" +
		"copy example.com/up@v1.0.0 pkg/a/a.go plugin.Init - pkg/z.go:init\n" +
		"relies example.com/up@v1.0.0 pkg/a/a.go registry - pkg/w.go:w\n"
	if err := os.WriteFile(listFile, []byte(listText), 0o644); err != nil {
		t.Fatal(err)
	}
	l, err := readList(listFile)
	if err != nil {
		t.Fatal(err)
	}
	dirs := map[string]module{"example.com/up": {version: "v1.0.0", dir: old}}
	var out bytes.Buffer
	if err := report(&out, l, l.evaluate(dirs)); err == nil || !strings.Contains(out.String(), "NO HASH") {
		t.Fatalf("check of unrecorded entries passed or said nothing: %v\n%s", err, out.String())
	}
	if err := update(&out, listFile, l, l.evaluate(dirs)); err != nil {
		t.Fatal(err)
	}
	if l, err = readList(listFile); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	if err := report(&out, l, l.evaluate(dirs)); err != nil {
		t.Fatalf("check right after update: %v\n%s", err, out.String())
	}
	data, _ := os.ReadFile(listFile)
	if !strings.HasPrefix(string(data), "# header kept\n") || strings.Count(string(data), "\n") != 6 {
		t.Errorf("update did not keep comments and blank lines:\n%s", data)
	}

	// A version bump: Join changed, plugin.Init moved to another file,
	// Handler is gone, registry is unchanged.
	bumped := replace(t, src, "len(parts) == 0", "len(parts) < 2")
	bumped = replace(t, bumped, "// Init sets the handler's plugin.\nfunc (p *plugin) Init(h *Handler) error {\n\th.plugin = p\n\treturn nil\n}\n", "")
	bumped = replace(t, bumped, "type Handler struct {\n\tplugin *plugin\n}\n", "type Handler struct{}\n")
	bumped = strings.ReplaceAll(bumped, "h.plugin.name", `""`)
	bumped = replace(t, bumped, "type Handler struct{}", "type Registry struct{}")
	bumped = replace(t, bumped, "func (h Handler) Name()", "func (h Registry) Name()")
	moved := "package fixture\n\nfunc (p *plugin) Init(h *Registry) error {\n\treturn nil\n}\n"
	newDir := fakeModule(t, map[string]string{"pkg/a/a.go": bumped, "pkg/a/init.go": moved, "pkg/a/init_test.go": moved})
	dirs = map[string]module{"example.com/up": {version: "v1.1.0", dir: newDir}}
	out.Reset()
	err = report(&out, l, l.evaluate(dirs))
	if err == nil {
		t.Fatalf("check passed after the version bump:\n%s", out.String())
	}
	for _, want := range []string{
		"CHANGED  example.com/up@v1.1.0 pkg/a/a.go Join",
		"nodeplug's copy cmd/x.go:join must follow it",
		"MOVED    example.com/up@v1.1.0 pkg/a/a.go plugin.Init: now declared in init.go (and changed)",
		"GONE     example.com/up@v1.1.0 pkg/a/a.go Handler",
		"check that pkg/y.go:reflect still gets the behaviour it relies on",
		"note: example.com/up was recorded at v1.0.0 -> v1.1.0",
		"3 of 4 upstream declarations",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("check output lacks %q:\n%s", want, out.String())
		}
	}
	if strings.Contains(out.String(), "registry") {
		t.Errorf("check output names the unchanged registry:\n%s", out.String())
	}
	if err := update(&out, listFile, l, l.evaluate(dirs)); err == nil || !strings.Contains(err.Error(), "Handler") {
		t.Errorf("update with a gone declaration: err = %v, want a refusal naming Handler", err)
	}
	if after, _ := os.ReadFile(listFile); !bytes.Equal(after, data) {
		t.Errorf("a refused update changed the list")
	}
}

func TestParseListErrors(t *testing.T) {
	for _, tc := range []struct{ name, text, want string }{
		{"too few fields", "copy m@v1 f.go F -\n", "want 6 fields"},
		{"no version", "copy m f.go F - x\n", "is not MODULE@VERSION"},
		{"bad kind", "uses m@v1 f.go F - x\n", "neither copy nor relies"},
		{"duplicate", "copy m@v1 f.go F - x\nrelies m@v1 f.go F - y\n", "already listed on line 1"},
		{"empty", "# nothing\n", "no entries"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := parseList("l.txt", []byte(tc.text)); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want %q", err, tc.want)
			}
		})
	}
}
