package main

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path"
	"sort"
	"strconv"
	"strings"
	"time"
)

// knownArch is the architectures an image may be built for: those of
// make release (docs/release.md).
var knownArch = map[string]bool{"amd64": true, "arm64": true}

// entry is one thing in the image's only layer.
type entry struct {
	dest, src, link string
	mode            int64
	dir             bool
	caps            string // security.capability's value, or empty (-cap)
}

type imageSpec struct {
	out, name, arch      string
	user                 string
	entrypoint, cmd, env []string
	entries              []entry
}

func (s *imageSpec) parse(files, links, dirs []string) error {
	if s.out == "" || s.name == "" {
		return errors.New("-o and -name are required")
	}
	if err := checkUser(s.user); err != nil {
		return err
	}
	if !strings.Contains(s.name, ":") {
		return fmt.Errorf("-name %q needs a tag", s.name)
	}
	if !knownArch[s.arch] {
		return fmt.Errorf("-arch %q: want amd64 or arm64", s.arch)
	}
	for _, f := range files {
		dest, src, ok := strings.Cut(f, "=")
		if !ok {
			return fmt.Errorf("-file %q: want DEST=SRC[:MODE]", f)
		}
		e := entry{dest: dest, src: src}
		if i := strings.LastIndex(src, ":"); i > 0 {
			m, err := strconv.ParseInt(src[i+1:], 8, 32)
			if err != nil {
				return fmt.Errorf("-file %q: bad mode: %w", f, err)
			}
			e.src, e.mode = src[:i], m
		}
		st, err := os.Stat(e.src)
		if err != nil {
			return fmt.Errorf("-file %q: %w", f, err)
		}
		if e.mode == 0 {
			e.mode = int64(st.Mode().Perm())
		}
		s.entries = append(s.entries, e)
	}
	for _, l := range links {
		dest, target, ok := strings.Cut(l, "=")
		if !ok {
			return fmt.Errorf("-link %q: want DEST=TARGET", l)
		}
		s.entries = append(s.entries, entry{dest: dest, link: target})
	}
	for _, d := range dirs {
		s.entries = append(s.entries, entry{dest: d, dir: true, mode: 0o755})
	}
	return nil
}

// layer returns the uncompressed layer tar. Parent directories are added
// implicitly; entries are sorted so the output does not depend on flag order.
func (s *imageSpec) layer() ([]byte, error) {
	all := map[string]entry{}
	for _, e := range s.entries {
		e.dest = strings.TrimPrefix(path.Clean("/"+e.dest), "/")
		for dir := path.Dir(e.dest); dir != "." && dir != "/"; dir = path.Dir(dir) {
			if _, ok := all[dir]; !ok {
				all[dir] = entry{dest: dir, dir: true, mode: 0o755}
			}
		}
		all[e.dest] = e
	}
	names := make([]string, 0, len(all))
	for n := range all {
		names = append(names, n)
	}
	sort.Strings(names)
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, n := range names {
		if err := writeEntry(tw, all[n]); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func writeEntry(tw *tar.Writer, e entry) error {
	h := &tar.Header{Name: e.dest, Mode: e.mode, ModTime: time.Unix(0, 0), Format: tar.FormatPAX}
	var body []byte
	switch {
	case e.dir:
		h.Typeflag, h.Name = tar.TypeDir, e.dest+"/"
	case e.link != "":
		h.Typeflag, h.Linkname, h.Mode = tar.TypeSymlink, e.link, 0o777
	default:
		b, err := os.ReadFile(e.src)
		if err != nil {
			return err
		}
		h.Typeflag, h.Size, body = tar.TypeReg, int64(len(b)), b
		if e.caps != "" {
			h.PAXRecords = map[string]string{capabilityXattr: e.caps}
		}
	}
	if err := tw.WriteHeader(h); err != nil {
		return fmt.Errorf("%s: %w", e.dest, err)
	}
	_, err := tw.Write(body)
	return err
}

func digest(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// write assembles the docker-archive: manifest.json, the image config and
// the layer.
func (s *imageSpec) write() error {
	layer, err := s.layer()
	if err != nil {
		return err
	}
	layerID := digest(layer)
	runConfig := map[string]any{"Entrypoint": s.entrypoint, "Cmd": s.cmd, "Env": s.env}
	if s.user != "" {
		runConfig["User"] = s.user
	}
	config, err := json.Marshal(map[string]any{
		"architecture": s.arch, "os": "linux", "created": time.Unix(0, 0).UTC(),
		"config": runConfig,
		"rootfs": map[string]any{"type": "layers", "diff_ids": []string{"sha256:" + layerID}},
	})
	if err != nil {
		return err
	}
	configName := digest(config) + ".json"
	manifest, err := json.Marshal([]map[string]any{{
		"Config": configName, "RepoTags": []string{s.name}, "Layers": []string{layerID + "/layer.tar"},
	}})
	if err != nil {
		return err
	}
	var out bytes.Buffer
	tw := tar.NewWriter(&out)
	for _, f := range []struct {
		name string
		body []byte
	}{{configName, config}, {layerID + "/layer.tar", layer}, {"manifest.json", manifest}} {
		h := &tar.Header{Name: f.name, Mode: 0o644, Size: int64(len(f.body)), ModTime: time.Unix(0, 0), Typeflag: tar.TypeReg}
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if _, err := tw.Write(f.body); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return os.WriteFile(s.out, out.Bytes(), 0o644)
}
