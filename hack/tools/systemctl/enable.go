package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// A unit is enabled as systemd records it, by a link to its file in
// <target>.wants/ (WantedBy=) or <target>.requires/ (RequiredBy=), but
// only in the node's own directory: the node's other unit directories may
// be the host's, which enable and disable never change. Nothing starts an
// enabled unit when the node starts; the state is what is-enabled reports
// (kubeadm's preflight asks it), and enable --now starts the unit.

// enabledLinks are the links that enable the unit name.
func (m *manager) enabledLinks(name string) []string {
	wants, _ := filepath.Glob(filepath.Join(m.dir, "*.wants", name))
	requires, _ := filepath.Glob(filepath.Join(m.dir, "*.requires", name))
	return append(wants, requires...)
}

// unitFileState is systemctl's UnitFileState of name: enabled, disabled,
// static (no [Install] targets), masked, not-found, or bad (the unit does
// not load).
func (m *manager) unitFileState(name string) string {
	u, err := loadUnit(m.unitPath, name)
	switch {
	case errors.Is(err, errNotFound):
		return "not-found"
	case errors.Is(err, errMasked):
		return "masked"
	case err != nil:
		return "bad"
	case len(m.enabledLinks(name)) > 0:
		return "enabled"
	case len(u.Install) == 0:
		return "static"
	}
	return "disabled"
}

// isEnabled prints each unit's state; exit 0 if any is enabled or static.
func isEnabled(m *manager, a args) int {
	if len(a.units) == 0 {
		fmt.Fprintln(os.Stderr, "Too few arguments.")
		return exitFailure
	}
	rc := exitFailure
	for _, name := range a.units {
		s := m.unitFileState(name)
		if !a.quiet {
			fmt.Println(s)
		}
		if s == "enabled" || s == "static" {
			rc = 0
		}
	}
	return rc
}

// enableUnits runs enable or disable on each unit, then with --now starts
// or stops them.
func enableUnits(m *manager, a args) int {
	if len(a.units) == 0 {
		fmt.Fprintln(os.Stderr, "Too few arguments.")
		return exitFailure
	}
	for _, name := range a.units {
		u, err := loadUnit(m.unitPath, name)
		switch {
		case errors.Is(err, errNotFound):
			fmt.Fprintf(os.Stderr, "Failed to %s unit: Unit file %s does not exist.\n", a.verb, name)
			return exitFailure
		case errors.Is(err, errMasked):
			fmt.Fprintf(os.Stderr, "Failed to %s unit: Unit file %s is masked.\n", a.verb, name)
			return exitFailure
		case err != nil:
			fmt.Fprintf(os.Stderr, "Failed to %s unit: %v\n", a.verb, err)
			return exitFailure
		}
		if a.verb == "enable" {
			err = m.enable(u)
		} else {
			err = m.disable(u)
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "Failed to %s unit %s: %v\n", a.verb, name, err)
			return exitFailure
		}
	}
	if !a.now {
		return 0
	}
	jobArgs := a
	jobArgs.verb = map[string]string{"enable": "start", "disable": "stop"}[a.verb]
	return jobs(m, jobArgs)
}

// enable links the unit's file into the node's <target>.wants/ or
// .requires/ of each of its [Install] targets.
func (m *manager) enable(u *unit) error {
	if len(u.Install) == 0 {
		fmt.Fprintf(os.Stderr, "%s has no WantedBy= or RequiredBy= in [Install]: it is static, and enabling it does nothing.\n", u.Name)
		return nil
	}
	for _, target := range u.Install {
		link := filepath.Join(m.dir, target, u.Name)
		if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
			return err
		}
		if dest, err := os.Readlink(link); err == nil && dest == u.Path {
			continue
		}
		if err := os.Remove(link); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		if err := os.Symlink(u.Path, link); err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "Created symlink %s -> %s.\n", link, u.Path)
	}
	return nil
}

// disable removes the unit's links from the node's directory.
func (m *manager) disable(u *unit) error {
	for _, link := range m.enabledLinks(u.Name) {
		if err := os.Remove(link); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		fmt.Fprintf(os.Stderr, "Removed %s.\n", link)
	}
	return nil
}
