package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// properties of a unit, as `systemctl show` names them.
func properties(m *manager, name string) map[string]string {
	p := map[string]string{"Id": name, "Names": name, "LoadState": "not-found",
		"ActiveState": "inactive", "SubState": "dead", "MainPID": "0", "ExecMainPID": "0"}
	u, err := loadUnit(m.unitPath, name)
	switch {
	case errors.Is(err, errNotFound):
		return p
	case errors.Is(err, errMasked):
		p["LoadState"], p["UnitFileState"] = "masked", "masked"
		return p
	case err != nil:
		p["LoadState"] = "bad-setting"
		return p
	}
	p["LoadState"], p["FragmentPath"], p["Description"] = "loaded", u.Path, u.Description
	p["DropInPaths"] = strings.Join(u.DropIns, " ")
	p["ExecStart"] = "{ path=" + u.ExecStart[0] + " ; argv[]=" + strings.Join(u.ExecStart, " ") + " }"
	p["UnitFileState"] = m.unitFileState(name)
	if proc, ok := m.running(name); ok {
		p["ActiveState"], p["SubState"] = "active", "running"
		p["MainPID"], p["ExecMainPID"] = strconv.Itoa(proc.PID), strconv.Itoa(proc.PID)
	} else if _, ok := m.supervising(name); ok {
		p["ActiveState"], p["SubState"] = "activating", "auto-restart"
	}
	p["Restart"] = u.Restart
	p["Environment"] = strings.Join(u.Environment, " ")
	files := make([]string, len(u.EnvFiles))
	for i, f := range u.EnvFiles {
		files[i] = fmt.Sprintf("%s (ignore_errors=%s)", f.path, map[bool]string{true: "yes", false: "no"}[f.optional])
	}
	p["EnvironmentFiles"] = strings.Join(files, " ")
	return p
}

var defaultShow = []string{"Id", "Names", "Description", "LoadState", "ActiveState", "SubState",
	"MainPID", "ExecMainPID", "FragmentPath", "DropInPaths", "ExecStart", "UnitFileState"}

func show(m *manager, a args) int {
	if len(a.units) == 0 {
		fmt.Fprintln(os.Stderr, "systemctl show: name a unit (the manager's own properties are not served)")
		return exitFailure
	}
	names := a.props
	if len(names) == 0 {
		names = defaultShow
	}
	for i, unitName := range a.units {
		if i > 0 {
			fmt.Println()
		}
		p := properties(m, unitName)
		for _, n := range names {
			v, ok := p[n]
			if !ok && len(a.props) == 0 {
				continue
			}
			if a.value {
				fmt.Println(v)
			} else {
				fmt.Printf("%s=%s\n", n, v)
			}
		}
	}
	return 0
}

func status(m *manager, a args) int {
	rc := 0
	for _, name := range a.units {
		p := properties(m, name)
		if p["LoadState"] == "not-found" {
			fmt.Fprintf(os.Stderr, "Unit %s could not be found.\n", name)
			rc = max(rc, exitNoSuchUnit)
			continue
		}
		fmt.Printf("* %s - %s\n", name, p["Description"])
		fmt.Printf("     Loaded: %s (%s; %s)\n", p["LoadState"], p["FragmentPath"], p["UnitFileState"])
		if p["DropInPaths"] != "" {
			fmt.Printf("    Drop-In: %s\n", p["DropInPaths"])
		}
		fmt.Printf("     Active: %s (%s)\n", p["ActiveState"], p["SubState"])
		if p["ActiveState"] != "active" {
			rc = max(rc, exitInactive)
			continue
		}
		exe, _ := os.Readlink(filepath.Join(m.proc, p["MainPID"], "exe"))
		fmt.Printf("   Main PID: %s (%s)\n", p["MainPID"], filepath.Base(exe))
	}
	return rc
}

func catUnits(m *manager, a args) int {
	for _, name := range a.units {
		u, err := loadUnit(m.unitPath, name)
		if err != nil {
			fmt.Fprintf(os.Stderr, "No files found for %s.\n", name)
			return exitFailure
		}
		for _, f := range append([]string{u.Path}, u.DropIns...) {
			raw, err := os.ReadFile(f)
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				return exitFailure
			}
			fmt.Printf("# %s\n%s\n", f, raw)
		}
	}
	return 0
}
