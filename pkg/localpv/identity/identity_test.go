package identity

import (
	"os"
	"path/filepath"
	"testing"
)

func TestCompare(t *testing.T) {
	a, b := WWN("naa.5000c500a1b2c3d4"), WWN("naa.5000c500a1b2c3d5")
	s := Serial("SAMSUNG MZ7", "S3Z1NB0K", 1<<40)
	fsA, fsB := FS("1b4e28ba-2fa1-11d2-883f-0016d3cca427", 1, []byte{2, 0, 0, 0}), FS("9c2d0d6e-6a3b-4a0b-8f35-1f1a0b3c4d5e", 1, []byte{2, 0, 0, 0})
	l1, l2 := Loop("/var/img/a.img", 0, 0), Loop("/var/img/b.img", 0, 0)
	for _, tc := range []struct {
		name             string
		recorded, now    ID
		want             Match
		sameDisk, differ bool
	}{
		{name: "equal wwn", recorded: a, now: a, want: Same, sameDisk: true},
		{name: "other wwn", recorded: a, now: b, want: Different, differ: true},
		{name: "wwn against serial", recorded: a, now: s, want: Unknown},
		{name: "recorded unknown", recorded: "", now: a, want: Unknown},
		{name: "current unknown", recorded: a, now: "", want: Unknown},
		{name: "other file system", recorded: fsA, now: fsB, want: Different, differ: true},
		{name: "equal loop is weak", recorded: l1, now: l1, want: Same},
		{name: "other loop differs here, not across machines", recorded: l1, now: l2, want: Different},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Compare(tc.recorded, tc.now); got != tc.want {
				t.Errorf("Compare = %v, want %v", got, tc.want)
			}
			if got := SameDisk(tc.recorded, tc.now); got != tc.sameDisk {
				t.Errorf("SameDisk = %v, want %v", got, tc.sameDisk)
			}
			if got := DifferentDisk(tc.recorded, tc.now); got != tc.differ {
				t.Errorf("DifferentDisk = %v, want %v", got, tc.differ)
			}
		})
	}
}

func TestValid(t *testing.T) {
	for _, tc := range []struct {
		name string
		id   ID
		ok   bool
	}{
		{"unknown", "", true},
		{"wwn", WWN("eui.0025388b91b3c0a1"), true},
		{"serial with colons and spaces", Serial("WDC WD40:X", "WD-1 2", 4e12), true},
		{"loop path with spaces", Loop("/var/my images/a.img", 0, 0), true},
		{"no fields", "wwn:", false},
		{"unknown kind", "path:/dev/sdb", false},
		{"newline", "wwn:a\nb", false},
		{"too long", ID("wwn:" + string(make([]byte, MaxLength))), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.id.Valid(); (err == nil) != tc.ok {
				t.Errorf("Valid(%q) = %v, want ok %v", tc.id, err, tc.ok)
			}
		})
	}
}

func TestDisk(t *testing.T) {
	for _, tc := range []struct {
		name               string
		wwn, model, serial string
		want               ID
	}{
		{"wwn wins", "naa.1", "M", "S", WWN("naa.1")},
		{"serial", "", "M", "S", Serial("M", "S", 10)},
		{"nothing", "", "M", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Disk(tc.wwn, tc.model, tc.serial, 10); got != tc.want {
				t.Errorf("Disk = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestLoopDevice(t *testing.T) {
	sys := t.TempDir()
	dir := filepath.Join(sys, "block", "loop3", "loop")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for f, v := range map[string]string{"backing_file": "/var/img/a.img\n", "offset": "512\n", "sizelimit": "0\n"} {
		if err := os.WriteFile(filepath.Join(dir, f), []byte(v), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := LoopDevice(sys, "loop3"), Loop("/var/img/a.img", 512, 0); got != want {
		t.Errorf("LoopDevice = %q, want %q", got, want)
	}
	if got := LoopDevice(sys, "loop4"); got != "" {
		t.Errorf("LoopDevice of a detached device = %q, want unknown", got)
	}
}
