package driver

import (
	"strings"
	"testing"
)

func TestValidateID(t *testing.T) {
	cases := map[string]struct {
		id      string
		wantErr bool
	}{
		"provisioner's name":        {id: "pvc-0b1c2d3e-4f50-6172-8394-a5b6c7d8e9f0"},
		"hashed ID":                 {id: "h-0123456789abcdef"},
		"dots and underscores":      {id: "a.b_c-d"},
		"128 bytes":                 {id: strings.Repeat("a", 128)},
		"empty":                     {id: "", wantErr: true},
		"dot":                       {id: ".", wantErr: true},
		"dot dot":                   {id: "..", wantErr: true},
		"parent escape":             {id: "../etc", wantErr: true},
		"nested parent escape":      {id: "a/../../etc", wantErr: true},
		"subdirectory":              {id: "a/b", wantErr: true},
		"absolute path":             {id: "/etc/passwd", wantErr: true},
		"hidden (a volume record)":  {id: ".pvc-1.json", wantErr: true},
		"leading dash (a flag)":     {id: "-rf", wantErr: true},
		"NUL byte":                  {id: "a\x00b", wantErr: true},
		"space":                     {id: "a b", wantErr: true},
		"newline":                   {id: "a\nb", wantErr: true},
		"backslash":                 {id: `a\b`, wantErr: true},
		"non-ASCII":                 {id: "vol-ü", wantErr: true},
		"129 bytes":                 {id: strings.Repeat("a", 129), wantErr: true},
		"trailing slash":            {id: "pvc-1/", wantErr: true},
		"glob characters":           {id: "pvc-*", wantErr: true},
		"percent-encoded traversal": {id: "%2e%2e", wantErr: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			err := validateID(tc.id)
			if (err != nil) != tc.wantErr {
				t.Fatalf("validateID(%q) = %v, want error %v", tc.id, err, tc.wantErr)
			}
		})
	}
}

func TestIDForName(t *testing.T) {
	cases := map[string]struct {
		name   string
		hashed bool
	}{
		"provisioner's name is kept": {name: "pvc-0b1c2d3e-4f50-6172-8394-a5b6c7d8e9f0"},
		"64 bytes are kept":          {name: strings.Repeat("v", 64)},
		"65 bytes are hashed":        {name: strings.Repeat("v", 65), hashed: true},
		"a path is hashed":           {name: "../../etc", hashed: true},
		"a hidden name is hashed":    {name: ".x", hashed: true},
		"unicode is hashed":          {name: "volume ü", hashed: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			id := idForName(tc.name)
			if err := validateID(id); err != nil {
				t.Fatalf("idForName(%q) = %q, not a valid ID: %v", tc.name, id, err)
			}
			if hashed := id != tc.name; hashed != tc.hashed {
				t.Fatalf("idForName(%q) = %q, want hashed %v", tc.name, id, tc.hashed)
			}
			if again := idForName(tc.name); again != id {
				t.Fatalf("idForName(%q) is not stable: %q, then %q", tc.name, id, again)
			}
		})
	}
}

func TestConfigValidate(t *testing.T) {
	good := Config{Name: "hostpath.csi.nodeplug.io", NodeID: "n1", DataDir: "/d", KubeletDir: "/k", Endpoint: "/k/p/csi.sock"}
	cases := map[string]struct {
		edit    func(*Config)
		wantErr string
	}{
		"good":                     {edit: func(*Config) {}},
		"no registration":          {edit: func(c *Config) { c.RegistrationDir = "" }},
		"empty name":               {edit: func(c *Config) { c.Name = "" }, wantErr: "driver name"},
		"name with slash":          {edit: func(c *Config) { c.Name = "a/b" }, wantErr: "driver name"},
		"name of 64 bytes":         {edit: func(c *Config) { c.Name = strings.Repeat("a", 64) }, wantErr: "driver name"},
		"name ending in a dot":     {edit: func(c *Config) { c.Name = "a." }, wantErr: "driver name"},
		"no node ID":               {edit: func(c *Config) { c.NodeID = "" }, wantErr: "node ID"},
		"relative data dir":        {edit: func(c *Config) { c.DataDir = "data" }, wantErr: "data dir"},
		"unclean kubelet dir":      {edit: func(c *Config) { c.KubeletDir = "/var/lib/../kubelet" }, wantErr: "kubelet dir"},
		"relative endpoint":        {edit: func(c *Config) { c.Endpoint = "csi.sock" }, wantErr: "endpoint"},
		"endpoint too long":        {edit: func(c *Config) { c.Endpoint = "/" + strings.Repeat("s", 107) }, wantErr: "longer than a unix socket path"},
		"relative registration":    {edit: func(c *Config) { c.RegistrationDir = "reg" }, wantErr: "registration dir"},
		"negative max volume size": {edit: func(c *Config) { c.MaxVolumeBytes = -1 }, wantErr: "negative"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c := good
			tc.edit(&c)
			_, err := New(c)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("New: %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("New: %v, want an error about %q", err, tc.wantErr)
			}
		})
	}
}
