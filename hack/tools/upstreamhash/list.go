package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
)

// entry is one line of the list.
type entry struct {
	line     int // index into list.lines
	kind     string
	module   string
	version  string // recorded at
	file     string
	symbol   string
	hash     string // "-" when not recorded
	nodeplug string
}

func (e *entry) String() string {
	return fmt.Sprintf("%s %s %s", e.module, e.file, e.symbol)
}

type list struct {
	lines   []string
	entries []*entry
}

// parseList reads the list file format described in main.go.
func parseList(name string, data []byte) (*list, error) {
	l := &list{lines: strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")}
	seen := map[string]int{}
	var errs []error
	for i, raw := range l.lines {
		line := strings.TrimSpace(raw)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		if len(f) != 6 {
			errs = append(errs, fmt.Errorf("%s:%d: want 6 fields (KIND MODULE@VERSION FILE SYMBOL HASH NODEPLUG), got %d", name, i+1, len(f)))
			continue
		}
		mod, ver, ok := strings.Cut(f[1], "@")
		if !ok || mod == "" || ver == "" {
			errs = append(errs, fmt.Errorf("%s:%d: %q is not MODULE@VERSION", name, i+1, f[1]))
			continue
		}
		if f[0] != "copy" && f[0] != "relies" {
			errs = append(errs, fmt.Errorf("%s:%d: kind %q is neither copy nor relies", name, i+1, f[0]))
			continue
		}
		e := &entry{line: i, kind: f[0], module: mod, version: ver, file: f[2], symbol: f[3], hash: f[4], nodeplug: f[5]}
		if prev, dup := seen[e.String()]; dup {
			errs = append(errs, fmt.Errorf("%s:%d: %s is already listed on line %d", name, i+1, e, prev+1))
			continue
		}
		seen[e.String()] = i
		l.entries = append(l.entries, e)
	}
	if len(l.entries) == 0 && len(errs) == 0 {
		errs = append(errs, fmt.Errorf("%s: no entries", name))
	}
	return l, errors.Join(errs...)
}

func readList(name string) (*list, error) {
	data, err := os.ReadFile(name)
	if err != nil {
		return nil, err
	}
	return parseList(name, data)
}

// modules returns the modules the entries name, sorted.
func (l *list) modules() []string {
	set := map[string]bool{}
	for _, e := range l.entries {
		set[e.module] = true
	}
	out := make([]string, 0, len(set))
	for m := range set {
		out = append(out, m)
	}
	sort.Strings(out)
	return out
}

// module is where the version of a module that go.mod selects lives.
type module struct {
	version string
	dir     string
}

// moduleDirs asks the go command for the selected version and module cache
// directory of each module (following replace directives), downloading
// those not in the cache.
func moduleDirs(paths []string) (map[string]module, error) {
	out, err := goCmd(append([]string{"list", "-m", "-json"}, paths...)...)
	if err != nil {
		return nil, err
	}
	type mod struct {
		Path, Version, Dir string
		Replace            *mod
	}
	dirs := map[string]module{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var m mod
		if err := dec.Decode(&m); err == io.EOF {
			break
		} else if err != nil {
			return nil, fmt.Errorf("go list -m -json: %w", err)
		}
		got := module{version: m.Version, dir: m.Dir}
		dlPath := m.Path
		if r := m.Replace; r != nil {
			got = module{version: r.Version, dir: r.Dir}
			dlPath = r.Path
		}
		if got.version == "" {
			return nil, fmt.Errorf("module %s is replaced by a directory, not a version; its sources cannot be checked", m.Path)
		}
		if got.dir == "" {
			out, err := goCmd("mod", "download", "-json", dlPath+"@"+got.version)
			if err != nil {
				return nil, err
			}
			var d mod
			if err := json.Unmarshal(out, &d); err != nil || d.Dir == "" {
				return nil, fmt.Errorf("go mod download %s@%s gave no directory", dlPath, got.version)
			}
			got.dir = d.Dir
		}
		dirs[m.Path] = got
	}
	for _, p := range paths {
		if _, ok := dirs[p]; !ok {
			return nil, fmt.Errorf("module %s is not in go.mod's build list", p)
		}
	}
	return dirs, nil
}

func goCmd(args ...string) ([]byte, error) {
	cmd := exec.Command("go", args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return out, nil
}

// status is what the check found for one entry.
type status int

const (
	statusOK         status = iota
	statusUnrecorded        // no hash recorded yet
	statusChanged           // the declaration's hash differs
	statusMoved             // declared in another file of the same package
	statusGone              // declared nowhere in the package
	statusError             // the file cannot be read or parsed
)

type result struct {
	e       *entry
	status  status
	version string // the version go.mod selects now
	hash    string // the hash now (of the moved declaration for statusMoved)
	movedTo []string
	err     error
}

// evaluate hashes every entry's declaration in the selected module versions.
func (l *list) evaluate(dirs map[string]module) []result {
	out := make([]result, 0, len(l.entries))
	for _, e := range l.entries {
		m := dirs[e.module]
		r := result{e: e, version: m.version}
		path := filepath.Join(m.dir, filepath.FromSlash(e.file))
		h, err := hashFile(path, e.symbol)
		switch {
		case err == nil:
			r.hash = h
			switch e.hash {
			case h:
				r.status = statusOK
			case "-":
				r.status = statusUnrecorded
			default:
				r.status = statusChanged
			}
		case errors.Is(err, errNotFound) || errors.Is(err, os.ErrNotExist):
			r.movedTo = findInPackage(filepath.Dir(path), filepath.Base(path), e.symbol)
			r.status = statusGone
			if len(r.movedTo) > 0 {
				r.status = statusMoved
				r.hash, _ = hashFile(filepath.Join(filepath.Dir(path), r.movedTo[0]), e.symbol)
			}
		default:
			r.status, r.err = statusError, err
		}
		out = append(out, r)
	}
	return out
}

// describe says in one line what happened to a result's declaration.
func (r result) describe() string {
	e := r.e
	at := e.module + "@" + r.version
	switch r.status {
	case statusUnrecorded:
		return fmt.Sprintf("NO HASH  %s %s %s: no hash recorded yet", at, e.file, e.symbol)
	case statusChanged:
		return fmt.Sprintf("CHANGED  %s %s %s: its declaration differs from the one recorded at %s", at, e.file, e.symbol, e.version)
	case statusMoved:
		same := "and changed"
		if r.hash == e.hash {
			same = "unchanged"
		}
		return fmt.Sprintf("MOVED    %s %s %s: now declared in %s (%s)", at, e.file, e.symbol,
			strings.Join(r.movedTo, ", "), same)
	case statusGone:
		return fmt.Sprintf("GONE     %s %s %s: no longer declared in %s nor elsewhere in its package", at, e.file, e.symbol, e.file)
	case statusError:
		return fmt.Sprintf("ERROR    %s %s %s: %v", at, e.file, e.symbol, r.err)
	}
	return fmt.Sprintf("ok       %s %s %s", at, e.file, e.symbol)
}

// todo says what the reviewer must look at in nodeplug.
func (r result) todo() string {
	if r.e.kind == "copy" {
		return "nodeplug's copy " + r.e.nodeplug + " must follow it (or use upstream's, if now exported)"
	}
	return "check that " + r.e.nodeplug + " still gets the behaviour it relies on"
}

// report prints the check's verdict and returns an error if any entry needs
// a review.
func report(w io.Writer, l *list, results []result) error {
	var bad []result
	bumped := map[string]string{}
	for _, r := range results {
		if r.status != statusOK {
			bad = append(bad, r)
		}
		if r.version != r.e.version {
			bumped[r.e.module] = r.e.version + " -> " + r.version
		}
	}
	for _, m := range sortedKeys(bumped) {
		fmt.Fprintf(w, "note: %s was recorded at %s\n", m, bumped[m])
	}
	if len(bad) == 0 {
		fmt.Fprintf(w, "upstream internals: the %d upstream declarations nodeplug copies or relies on are unchanged\n", len(results))
		if len(bumped) > 0 {
			fmt.Fprintln(w, "note: run hack/update-upstream-internals.sh to record the new versions")
		}
		return nil
	}
	fmt.Fprintf(w, "upstream internals: %d of %d upstream declarations that nodeplug copies or relies on need a review:\n", len(bad), len(results))
	for _, r := range bad {
		fmt.Fprintf(w, "  %s\n           %s\n", r.describe(), r.todo())
	}
	fmt.Fprintln(w, "Compare each with nodeplug's code (docs/upstream-internals.md says what nodeplug takes from it and why),")
	fmt.Fprintln(w, "fix nodeplug where needed, then record the reviewed sources with hack/update-upstream-internals.sh.")
	return fmt.Errorf("%d upstream declaration(s) changed, moved or gone", len(bad))
}

// update rewrites the list with the hashes, versions and (for a
// declaration that moved to exactly one other file) paths of now. It
// refuses when a declaration is gone or cannot be read: that entry, and
// nodeplug's code, must be changed by hand.
func update(w io.Writer, name string, l *list, results []result) error {
	var stuck []string
	for _, r := range results {
		switch {
		case r.status == statusGone || r.status == statusError:
			stuck = append(stuck, r.describe())
		case r.status == statusMoved && len(r.movedTo) != 1:
			stuck = append(stuck, r.describe()+": declared in several files, edit the entry by hand")
		}
	}
	if len(stuck) > 0 {
		return fmt.Errorf("nothing written; these entries must be edited by hand:\n  %s", strings.Join(stuck, "\n  "))
	}
	changed := 0
	for _, r := range results {
		e := r.e
		old := *e
		if r.status == statusMoved {
			e.file = filepath.ToSlash(filepath.Join(filepath.Dir(filepath.FromSlash(e.file)), r.movedTo[0]))
		}
		e.hash, e.version = r.hash, r.version
		if old != *e {
			changed++
			if r.status != statusOK {
				fmt.Fprintf(w, "recorded: %s\n", r.describe())
			}
		}
	}
	l.format()
	if err := os.WriteFile(name, []byte(strings.Join(l.lines, "\n")+"\n"), 0o644); err != nil {
		return err
	}
	fmt.Fprintf(w, "upstream internals: %d of %d entries updated in %s\n", changed, len(results), name)
	return nil
}

// format rewrites the entry lines from the entries, in columns aligned
// within each block of consecutive entry lines.
func (l *list) format() {
	for start := 0; start < len(l.entries); {
		end := start + 1
		for end < len(l.entries) && l.entries[end].line == l.entries[end-1].line+1 {
			end++
		}
		formatBlock(l.lines, l.entries[start:end])
		start = end
	}
}

func formatBlock(lines []string, block []*entry) {
	rows := make([][]string, len(block))
	var width [5]int
	for i, e := range block {
		rows[i] = []string{e.kind, e.module + "@" + e.version, e.file, e.symbol, e.hash, e.nodeplug}
		for c := range width {
			width[c] = max(width[c], len(rows[i][c]))
		}
	}
	for i, e := range block {
		var b strings.Builder
		for c, f := range rows[i] {
			b.WriteString(f)
			if c < len(width) {
				b.WriteString(strings.Repeat(" ", width[c]-len(f)+1))
			}
		}
		lines[e.line] = b.String()
	}
}

func sortedKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
