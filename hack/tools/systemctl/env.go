package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
)

// envFile is an EnvironmentFile= setting: a path (or a glob), optional
// when written with a leading '-'.
type envFile struct {
	path     string
	optional bool
}

// baseEnvironment is what every service and supervisor gets before the
// unit's own settings: systemd's default PATH, and this manager's unit
// directory.
func (m *manager) baseEnvironment() []string {
	return []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
		"NODEPLUG_SYSTEMD_DIR=" + m.dir}
}

// environment is the service's environment as systemd builds it when it
// starts the service: the base, then Environment= in order, then the
// EnvironmentFile= files, read now, in order; a later assignment of a
// variable wins, so a file's value overrides Environment='s.
func (m *manager) environment(u *unit) ([]string, error) {
	env := append(m.baseEnvironment(), u.Environment...)
	for _, f := range u.EnvFiles {
		vars, err := readEnvFiles(f)
		if err != nil {
			return nil, err
		}
		env = append(env, vars...)
	}
	return mergeEnv(env), nil
}

// readEnvFiles reads the file (or the files the glob matches, in lexical
// order) of an EnvironmentFile= setting.
func readEnvFiles(f envFile) ([]string, error) {
	files := []string{f.path}
	if strings.ContainsAny(f.path, "*?[") {
		files, _ = filepath.Glob(f.path)
		sort.Strings(files)
		if len(files) == 0 && !f.optional {
			return nil, fmt.Errorf("EnvironmentFile=%s: no file matches (write EnvironmentFile=-%s if it is optional)", f.path, f.path)
		}
	}
	var vars []string
	for _, p := range files {
		raw, err := os.ReadFile(p)
		if errors.Is(err, fs.ErrNotExist) && f.optional {
			continue
		}
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil, fmt.Errorf("EnvironmentFile=%s does not exist (write EnvironmentFile=-%s if it is optional)", p, p)
			}
			return nil, fmt.Errorf("EnvironmentFile=%s: %w", p, err)
		}
		for _, kv := range parseEnvFile(string(raw)) {
			if key, _, _ := strings.Cut(kv, "="); !validEnvName(key) {
				fmt.Fprintf(os.Stderr, "%s: ignoring the invalid variable name %q\n", p, key)
				continue
			}
			vars = append(vars, kv)
		}
	}
	return vars, nil
}

func validEnvName(key string) bool {
	return key != "" && !strings.ContainsAny(key, " \t\n\r") && (key[0] < '0' || key[0] > '9')
}

// mergeEnv keeps the last assignment of each variable, in the order of
// their first assignments.
func mergeEnv(env []string) []string {
	index := map[string]int{}
	var out []string
	for _, kv := range env {
		key, _, _ := strings.Cut(kv, "=")
		if i, ok := index[key]; ok {
			out[i] = kv
			continue
		}
		index[key] = len(out)
		out = append(out, kv)
	}
	return out
}

// lookupEnv returns the value of key in env (KEY=VALUE entries).
func lookupEnv(env []string, key string) (string, bool) {
	for _, kv := range slices.Backward(env) {
		if k, v, _ := strings.Cut(kv, "="); k == key {
			return v, true
		}
	}
	return "", false
}
