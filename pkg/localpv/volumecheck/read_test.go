package volumecheck

import (
	"os"
	"path/filepath"
	"testing"
)

// TestResolveDevice: directories (also through a link) are directories;
// files, character devices and missing paths are errors, which Check turns
// into an unreadable refusal for a strong identity.
func TestResolveDevice(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(dir, link); err != nil {
		t.Fatal(err)
	}
	cases := map[string]struct {
		path    string
		wantErr bool
	}{
		"directory":           {path: dir},
		"link to a directory": {path: link},
		"regular file":        {path: file, wantErr: true},
		"character device":    {path: "/dev/null", wantErr: true},
		"missing path":        {path: filepath.Join(dir, "gone"), wantErr: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, isDev, err := ResolveDevice(tc.path)
			if (err != nil) != tc.wantErr || isDev {
				t.Fatalf("ResolveDevice(%s) = device %v, %v; want error %v", tc.path, isDev, err, tc.wantErr)
			}
			if _, err := PathReader("")(tc.path, ""); (err != nil) != tc.wantErr {
				t.Fatalf("PathReader(%s): %v, want error %v", tc.path, err, tc.wantErr)
			}
		})
	}
}
