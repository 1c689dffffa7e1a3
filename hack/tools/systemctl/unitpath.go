package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// systemdUnitPath is where systemd itself looks for system units, highest
// priority first (without its generator and transient directories).
// /lib/systemd/system is the same directory as /usr/lib/systemd/system on
// a merged-/usr system; listing both costs nothing, as the first file of a
// name masks the others.
var systemdUnitPath = []string{
	"/etc/systemd/system",
	"/run/systemd/system",
	"/usr/local/lib/systemd/system",
	"/usr/lib/systemd/system",
	"/lib/systemd/system",
}

// unitPathEnv, when set, is the whole search path, directories separated
// by ':' (tests). Otherwise the file unitPathFile of the node's own
// directory, if it exists, is: one directory a line (or ':'-separated), so
// that a node can keep the host's unit directories out of its path.
const (
	unitPathEnv  = "NODEPLUG_SYSTEMD_UNIT_PATH"
	unitPathFile = "unit-path"
)

// unitPath is the search path of a node whose own unit directory is own:
// env's, or own's unit-path file's, or own first, so that the units
// local-up writes there win over the host's units of the same name (a
// node sees the host's /etc and /usr, where Debian's openssh-server
// installs its own ssh.service), then systemd's directories.
func unitPath(own, env string) []string {
	if env == "" {
		raw, _ := os.ReadFile(filepath.Join(own, unitPathFile))
		env = strings.NewReplacer("\n", ":", "\r", ":").Replace(string(raw))
	}
	var dirs []string
	for _, d := range strings.Split(env, ":") {
		if d = strings.TrimSpace(d); d != "" && !strings.HasPrefix(d, "#") {
			dirs = append(dirs, d)
		}
	}
	if len(dirs) == 0 {
		return append([]string{own}, systemdUnitPath...)
	}
	return dirs
}

var errMasked = errors.New("masked")

// findUnit returns the unit file of name: the first of the path's
// directories that has it. A file that is empty or a link to /dev/null
// masks the unit, as in systemd.
func findUnit(path []string, name string) (string, error) {
	for _, dir := range path {
		p := filepath.Join(dir, name)
		fi, err := os.Lstat(p)
		if err != nil {
			continue
		}
		if fi.Mode()&os.ModeSymlink != 0 {
			if target, _ := os.Readlink(p); target == os.DevNull {
				return p, errMasked
			}
			if fi, err = os.Stat(p); err != nil {
				continue // a dangling link
			}
		}
		if fi.Mode().IsRegular() && fi.Size() == 0 {
			return p, errMasked
		}
		return p, nil
	}
	return "", fmt.Errorf("unit %s: %w", name, errNotFound)
}

// dropIns returns name's drop-ins, <name>.d/*.conf from every directory of
// path, in systemd's order: sorted by file name whichever directory holds
// them, a file masking the files of the same name in later directories.
func dropIns(path []string, name string) []string {
	byName := map[string]string{}
	for _, dir := range path {
		files, _ := filepath.Glob(filepath.Join(dir, name+".d", "*.conf"))
		for _, f := range files {
			if _, seen := byName[filepath.Base(f)]; !seen {
				byName[filepath.Base(f)] = f
			}
		}
	}
	names := make([]string, 0, len(byName))
	for n := range byName {
		names = append(names, n)
	}
	sort.Strings(names)
	out := make([]string, 0, len(names))
	for _, n := range names {
		if fi, err := os.Stat(byName[n]); err == nil && fi.Mode().IsRegular() {
			out = append(out, byName[n]) // a link to /dev/null masks and adds nothing
		}
	}
	return out
}
