package main

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// unit is what this service manager reads of a service unit: the
// [Service] keys it acts on, after the unit file and its drop-ins.
type unit struct {
	Name        string // "kubelet.service"
	Path        string // the unit file
	DropIns     []string
	Description string
	ExecStart   []string
	Environment []string          // KEY=VALUE, in order
	EnvFiles    []envFile         // EnvironmentFile=, in order
	Install     []string          // [Install] WantedBy= and RequiredBy=: "multi-user.target.wants"
	Output      string            // StandardOutput=append:PATH, "" for /dev/null
	KillSignal  syscall.Signal    // default SIGTERM
	StopTimeout time.Duration     // TimeoutStopSec, default 90 s
	HostPIDFile string            // X-HostPIDFile: where the host's PID is written
	Restart     string            // no (default), always, on-failure
	RestartSec  time.Duration     // default 100 ms
	Ignored     map[string]string // keys read and not acted on
}

var errNotFound = errors.New("not found")

// unitName is name with ".service" added when it has no unit type.
func unitName(name string) string {
	if strings.Contains(name, ".") {
		return name
	}
	return name + ".service"
}

// loadUnit reads the unit file of name, the first in path (findUnit),
// then its drop-ins from every directory of path (dropIns), as systemd
// applies them. An empty "ExecStart=", "Environment=" or
// "EnvironmentFile=" resets what came before.
func loadUnit(path []string, name string) (*unit, error) {
	u := &unit{Name: name, KillSignal: syscall.SIGTERM,
		StopTimeout: 90 * time.Second, Restart: "no", RestartSec: 100 * time.Millisecond, Ignored: map[string]string{}}
	if !strings.HasSuffix(name, ".service") {
		return nil, fmt.Errorf("unit %s: only service units are supported", name)
	}
	var err error
	if u.Path, err = findUnit(path, name); err != nil {
		if errors.Is(err, errMasked) {
			return nil, fmt.Errorf("unit %s is masked (%s): %w", name, u.Path, err)
		}
		return nil, err
	}
	if err := u.parseFile(u.Path); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("unit %s: %w", name, errNotFound)
		}
		return nil, err
	}
	for _, f := range dropIns(path, name) {
		if err := u.parseFile(f); err != nil {
			return nil, err
		}
		u.DropIns = append(u.DropIns, f)
	}
	if len(u.ExecStart) == 0 {
		return nil, fmt.Errorf("unit %s: no ExecStart= setting", name)
	}
	return u, nil
}

func (u *unit) parseFile(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	lines, err := logicalLines(f)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	section := ""
	for _, l := range lines {
		switch {
		case l.text == "" || strings.HasPrefix(l.text, "#") || strings.HasPrefix(l.text, ";"):
		case strings.HasPrefix(l.text, "[") && strings.HasSuffix(l.text, "]"):
			section = l.text
		default:
			key, value, ok := strings.Cut(l.text, "=")
			if !ok {
				return fmt.Errorf("%s:%d: %q is not KEY=VALUE", path, l.n, l.text)
			}
			if err := u.set(section, strings.TrimSpace(key), strings.TrimSpace(value)); err != nil {
				return fmt.Errorf("%s:%d: %w", path, l.n, err)
			}
		}
	}
	return nil
}

type line struct {
	n    int
	text string
}

// logicalLines joins lines ending in a backslash with the next one.
func logicalLines(f *os.File) ([]line, error) {
	var out []line
	var cur strings.Builder
	start := 0
	s := bufio.NewScanner(f)
	s.Buffer(make([]byte, 64*1024), 1024*1024)
	for n := 1; s.Scan(); n++ {
		t := strings.TrimSpace(s.Text())
		if cur.Len() == 0 {
			start = n
		}
		if strings.HasSuffix(t, "\\") {
			cur.WriteString(strings.TrimSuffix(t, "\\") + " ")
			continue
		}
		cur.WriteString(t)
		out = append(out, line{start, cur.String()})
		cur.Reset()
	}
	if cur.Len() > 0 {
		out = append(out, line{start, strings.TrimSpace(cur.String())})
	}
	return out, s.Err()
}

func (u *unit) set(section, key, value string) error {
	if section == "[Unit]" && key == "Description" {
		u.Description = value
		return nil
	}
	if section == "[Install]" && (key == "WantedBy" || key == "RequiredBy") {
		for _, target := range strings.Fields(value) {
			u.Install = append(u.Install, target+map[string]string{"WantedBy": ".wants", "RequiredBy": ".requires"}[key])
		}
		return nil
	}
	if section != "[Service]" {
		u.Ignored[section+key] = value // Documentation=, Wants=, After=, StartLimitInterval=, ...
		return nil
	}
	switch key {
	case "ExecStart":
		if value == "" {
			u.ExecStart = nil
			return nil
		}
		if len(u.ExecStart) > 0 {
			return errors.New("a second ExecStart= without an empty ExecStart= before it (only one command per service)")
		}
		argv, err := splitWords(strings.TrimLeft(value, "-@:+!"))
		if err != nil {
			return fmt.Errorf("ExecStart: %w", err)
		}
		if len(argv) == 0 || !filepath.IsAbs(argv[0]) {
			return fmt.Errorf("ExecStart=%s: the command must be an absolute path", value)
		}
		u.ExecStart = argv
	case "Environment":
		if value == "" {
			u.Environment = nil
			return nil
		}
		words, err := splitWords(value)
		if err != nil {
			return fmt.Errorf("Environment: %w", err)
		}
		for _, w := range words {
			if !strings.Contains(w, "=") {
				return fmt.Errorf("Environment: %q is not KEY=VALUE", w)
			}
		}
		u.Environment = append(u.Environment, words...)
	case "EnvironmentFile":
		if value == "" {
			u.EnvFiles = nil
			return nil
		}
		f := envFile{path: strings.TrimPrefix(value, "-"), optional: strings.HasPrefix(value, "-")}
		if !filepath.IsAbs(f.path) {
			return fmt.Errorf("EnvironmentFile=%s: the file must be an absolute path", value)
		}
		u.EnvFiles = append(u.EnvFiles, f)
	case "StandardOutput", "StandardError":
		switch {
		case strings.HasPrefix(value, "append:"):
			u.Output = strings.TrimPrefix(value, "append:")
		case value == "null", value == "inherit", value == "journal":
			if key == "StandardOutput" {
				u.Output = ""
			}
		default:
			return fmt.Errorf("%s=%s: only append:PATH, null, inherit and journal are supported", key, value)
		}
	case "KillSignal":
		sig, ok := signals[strings.TrimPrefix(value, "SIG")]
		if !ok {
			return fmt.Errorf("KillSignal=%s: unknown signal", value)
		}
		u.KillSignal = sig
	case "TimeoutStopSec":
		d, err := parseSeconds(value)
		if err != nil {
			return fmt.Errorf("TimeoutStopSec=%s: %w", value, err)
		}
		u.StopTimeout = d
	case "Restart":
		if value != "no" && value != "always" && value != "on-failure" {
			return fmt.Errorf("Restart=%s: only no, always and on-failure are supported", value)
		}
		u.Restart = value
	case "RestartSec":
		d, err := parseSeconds(value)
		if err != nil {
			return fmt.Errorf("RestartSec=%s: %w", value, err)
		}
		u.RestartSec = d
	case "X-HostPIDFile":
		u.HostPIDFile = value
	default:
		u.Ignored[section+key] = value
	}
	return nil
}

var signals = map[string]syscall.Signal{"TERM": syscall.SIGTERM, "INT": syscall.SIGINT,
	"QUIT": syscall.SIGQUIT, "KILL": syscall.SIGKILL, "HUP": syscall.SIGHUP}

// parseSeconds reads "90", "90s", "2min" or "500ms".
func parseSeconds(v string) (time.Duration, error) {
	if n, err := strconv.Atoi(v); err == nil && n >= 0 {
		return time.Duration(n) * time.Second, nil
	}
	d, err := time.ParseDuration(strings.Replace(v, "min", "m", 1))
	if err != nil || d < 0 {
		return 0, errors.New("not a duration")
	}
	return d, nil
}

// splitWords splits s on blanks, keeping "double" and 'single' quoted
// words whole and honouring backslash escapes in double quotes.
func splitWords(s string) ([]string, error) {
	var words []string
	var cur strings.Builder
	inWord := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == ' ' || c == '\t':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		case c == '"' || c == '\'':
			end := i + 1
			for ; end < len(s) && s[end] != c; end++ {
				if c == '"' && s[end] == '\\' && end+1 < len(s) {
					end++
				}
				cur.WriteByte(s[end])
			}
			if end >= len(s) {
				return nil, fmt.Errorf("unterminated quote in %q", s)
			}
			i, inWord = end, true
		default:
			cur.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words, nil
}

// quoteWords is splitWords' inverse: each word in double quotes.
func quoteWords(words []string) string {
	q := make([]string, len(words))
	for i, w := range words {
		q[i] = `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(w) + `"`
	}
	return strings.Join(q, " ")
}
