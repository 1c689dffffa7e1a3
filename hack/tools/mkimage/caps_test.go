package main

import (
	"archive/tar"
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// setcapNetBindService is the security.capability value `setcap
// cap_net_bind_service=+ep FILE` writes (read back with os.Getxattr).
const setcapNetBindService = "0100000200040000000000000000000000000000"

// TestUserAndCapabilities: -user names the image's user in its config,
// and -cap gives a file the capabilities setcap would, as a PAX xattr
// record containerd applies on unpacking.
func TestUserAndCapabilities(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "server")
	if err := os.WriteFile(src, []byte("server binary"), 0o755); err != nil {
		t.Fatal(err)
	}
	s := imageSpec{out: filepath.Join(dir, "image.tar"), name: testRef, arch: "amd64", user: "65532:65532"}
	if err := s.parse([]string{"/server=" + src, "/other=" + src}, nil, nil); err != nil {
		t.Fatal(err)
	}
	if err := s.addCapabilities([]string{"/server=cap_net_bind_service"}); err != nil {
		t.Fatal(err)
	}
	if err := s.write(); err != nil {
		t.Fatal(err)
	}
	files := readLayout(t, s.out)
	var manifest []struct {
		Config string
		Layers []string
	}
	if err := json.Unmarshal(files["manifest.json"], &manifest); err != nil || len(manifest) != 1 {
		t.Fatalf("manifest.json %s: %v", files["manifest.json"], err)
	}
	var cfg struct{ Config struct{ User string } }
	if err := json.Unmarshal(files[manifest[0].Config], &cfg); err != nil {
		t.Fatal(err)
	}
	if cfg.Config.User != "65532:65532" {
		t.Errorf("config User %q, want 65532:65532", cfg.Config.User)
	}
	records := paxRecords(t, files[manifest[0].Layers[0]])
	tests := []struct {
		name, file, want string
	}{
		{name: "the -cap file has setcap's value", file: "server", want: setcapNetBindService},
		{name: "another file has none", file: "other", want: ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := hex.EncodeToString([]byte(records[tc.file][capabilityXattr])); got != tc.want {
				t.Errorf("%s: security.capability %q, want %q", tc.file, got, tc.want)
			}
		})
	}
}

// TestUserAndCapabilitiesRejected: what -user and -cap refuse.
func TestUserAndCapabilitiesRejected(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "server")
	if err := os.WriteFile(src, []byte("x"), 0o755); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, user string
		caps       []string
		want       string
	}{
		{name: "a user name", user: "nonroot", want: "numeric"},
		{name: "a group name", user: "65532:nonroot", want: "numeric"},
		{name: "an unknown capability", caps: []string{"/server=cap_sys_admin"}, want: "unknown capability"},
		{name: "no capability", caps: []string{"/server="}, want: "want DEST=CAP"},
		{name: "a file the image does not have", caps: []string{"/missing=net_bind_service"}, want: "no -file /missing"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := imageSpec{out: filepath.Join(dir, "image.tar"), name: testRef, arch: "amd64", user: tc.user}
			err := s.parse([]string{"/server=" + src}, nil, nil)
			if err == nil {
				err = s.addCapabilities(tc.caps)
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

// paxRecords returns each regular file's PAX records in a layer tar.
func paxRecords(t *testing.T, layer []byte) map[string]map[string]string {
	t.Helper()
	out := map[string]map[string]string{}
	tr := tar.NewReader(bytes.NewReader(layer))
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeReg {
			out[h.Name] = h.PAXRecords
		}
	}
}
