// Command systemctl is the service manager of a node of the multi-node
// local cluster (hack/lib/nodes.sh): the subset of systemd's systemctl
// that upstream's e2e specs and an operator use on a kubeadm node, with
// systemctl's exit codes. Each node has it at /usr/local/sbin/systemctl;
// its units are files in systemd's syntax, looked for in the node's own
// /run/nodeplug/systemd (where local-up writes containerd, kubelet,
// kube-proxy and ssh) and then in systemd's directories (/etc/systemd/system,
// /run/systemd/system, /usr/local/lib/systemd/system, /usr/lib/systemd/system,
// /lib/systemd/system), with drop-ins <unit>.d/*.conf from all of them, so
// that a kubelet unit and kubeadm's drop-in installed as on any kubeadm
// node work. docs/local-cluster.md states the contract.
//
//	systemctl start|stop|restart|try-restart UNIT...
//	systemctl is-active UNIT...          prints active|activating|inactive; 0 or 3
//	systemctl show UNIT [-p PROP[,PROP]] [--value]
//	systemctl status UNIT...             0 active, 3 inactive, 4 no such unit
//	systemctl enable|disable [--now] UNIT...
//	systemctl is-enabled UNIT...         prints enabled|disabled|static|masked|not-found; 0 or 1
//	systemctl cat UNIT | daemon-reload (a no-op: units are read afresh)
//
// A started service runs in a session of its own; the node's init
// (hack/tools/nodeinit) adopts and reaps it. Its PID and start time are
// kept in /run/nodeplug/systemd/state, so a reused PID is never signalled.
// A unit with Restart=always or on-failure runs under a supervisor (this
// binary, hidden verb __supervise) that starts it again RestartSec after
// it ends.
// The own directory's file unit-path, when it exists, replaces the whole
// search path. NODEPLUG_SYSTEMD_DIR moves the node's own directory
// (tests), and NODEPLUG_SYSTEMD_UNIT_PATH replaces the search path (dirs
// separated by ':').
package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// systemctl's exit codes (LSB): the unit is not active, not found, or
// not loaded for a job.
const (
	exitFailure    = 1
	exitInactive   = 3
	exitNoSuchUnit = 4
	exitNotLoaded  = 5
)

func main() {
	os.Exit(run(newManager(os.Getenv), os.Args[1:]))
}

// newManager is the manager the environment names (NODEPLUG_SYSTEMD_DIR,
// NODEPLUG_SYSTEMD_UNIT_PATH).
func newManager(getenv func(string) string) *manager {
	dir := getenv("NODEPLUG_SYSTEMD_DIR")
	if dir == "" {
		dir = "/run/nodeplug/systemd"
	}
	m := &manager{dir: dir, unitPath: unitPath(dir, getenv(unitPathEnv)), stateDir: filepath.Join(dir, "state"), proc: "/proc"}
	if hp := filepath.Join(dir, "hostproc"); isProcMount(hp) {
		m.hostProc = hp
	}
	return m
}

func isProcMount(p string) bool {
	_, err := os.Stat(filepath.Join(p, "self", "ns", "pid"))
	return err == nil
}

// args are systemctl's: the verb, unit names, and options anywhere.
type args struct {
	verb  string
	units []string
	props []string
	value bool
	now   bool // enable --now starts, disable --now stops
	quiet bool // is-active and is-enabled print nothing
}

func parseArgs(argv []string) (args, error) {
	var a args
	for i := 0; i < len(argv); i++ {
		s := argv[i]
		switch {
		case s == "-p" || s == "--property":
			if i+1 >= len(argv) {
				return a, fmt.Errorf("option %s needs a value", s)
			}
			i++
			a.props = append(a.props, strings.Split(argv[i], ",")...)
		case strings.HasPrefix(s, "--property="):
			a.props = append(a.props, strings.Split(strings.TrimPrefix(s, "--property="), ",")...)
		case strings.HasPrefix(s, "-p") && len(s) > 2:
			a.props = append(a.props, strings.Split(s[2:], ",")...)
		case s == "--value":
			a.value = true
		case s == "-q", s == "--quiet":
			a.quiet = true
		case s == "--no-pager", s == "--no-block", s == "--system",
			s == "--full", s == "-l", s == "--no-legend":
		case s == "--now":
			a.now = true
		case strings.HasPrefix(s, "-"):
			return a, fmt.Errorf("unknown option %s", s)
		case a.verb == "":
			a.verb = s
		default:
			a.units = append(a.units, unitName(s))
		}
	}
	if a.verb == "" {
		return a, errors.New("no verb given (start, stop, restart, is-active, show, status, ...)")
	}
	return a, nil
}

func run(m *manager, argv []string) int {
	a, err := parseArgs(argv)
	if err != nil {
		fmt.Fprintf(os.Stderr, "systemctl: %v\n", err)
		return exitFailure
	}
	switch a.verb {
	case superviseVerb:
		if len(a.units) != 1 {
			return exitFailure
		}
		return supervise(m, a.units[0])
	case "daemon-reload", "reset-failed":
		return 0 // units are read afresh by every command
	case "enable", "disable":
		return enableUnits(m, a)
	case "is-enabled":
		return isEnabled(m, a)
	case "start", "stop", "restart", "try-restart":
		return jobs(m, a)
	case "is-active":
		return isActive(m, a)
	case "show":
		return show(m, a)
	case "status":
		return status(m, a)
	case "cat":
		return catUnits(m, a)
	}
	fmt.Fprintf(os.Stderr, "Unknown command verb '%s'.\n", a.verb)
	return exitFailure
}

func jobs(m *manager, a args) int {
	if len(a.units) == 0 {
		fmt.Fprintf(os.Stderr, "Too few arguments.\n")
		return exitFailure
	}
	for _, name := range a.units {
		u, err := loadUnit(m.unitPath, name)
		if err != nil {
			verb := strings.ToUpper(a.verb[:1]) + a.verb[1:]
			if errors.Is(err, errNotFound) {
				fmt.Fprintf(os.Stderr, "Failed to %s %s: Unit %s not found.\n", a.verb, name, name)
				return exitNotLoaded
			}
			if errors.Is(err, errMasked) {
				fmt.Fprintf(os.Stderr, "Failed to %s %s: Unit %s is masked.\n", a.verb, name, name)
				return exitFailure
			}
			fmt.Fprintf(os.Stderr, "%s of %s failed: %v\n", verb, name, err)
			return exitFailure
		}
		if a.verb == "try-restart" && !m.alive(name) {
			continue
		}
		if a.verb != "start" {
			if err := m.stop(u); err != nil {
				fmt.Fprintf(os.Stderr, "Failed to stop %s: %v\n", name, err)
				return exitFailure
			}
		}
		if a.verb != "stop" {
			if err := m.start(u); err != nil {
				fmt.Fprintf(os.Stderr, "Job for %s failed: %v\n", name, err)
				return exitFailure
			}
		}
	}
	return 0
}

func activeState(m *manager, name string) string {
	if m.alive(name) {
		return "active"
	}
	if _, ok := m.supervising(name); ok {
		return "activating" // auto-restart: between two runs
	}
	return "inactive"
}

func isActive(m *manager, a args) int {
	rc := 0
	for _, name := range a.units {
		s := activeState(m, name)
		if !a.quiet {
			fmt.Println(s)
		}
		if s != "active" {
			rc = exitInactive
		}
	}
	return rc
}
