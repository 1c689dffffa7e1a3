package app

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestValidate(t *testing.T) {
	src := filepath.Join(t.TempDir(), "drv")
	if err := os.WriteFile(src, []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		mutate  func(*Options)
		wantErr string
	}{
		{name: "valid", mutate: func(o *Options) { o.Drivers = []string{"example.com/nfs=" + src} }},
		{name: "tilde form", mutate: func(o *Options) { o.Drivers = []string{"example.com~nfs=" + src} }},
		{name: "no vendor", mutate: func(o *Options) { o.Drivers = []string{"nfs=" + src} }},
		{name: "no driver", mutate: func(*Options) {}, wantErr: "at least one --driver"},
		{name: "missing file part", mutate: func(o *Options) { o.Drivers = []string{"example.com/nfs"} }, wantErr: "want <vendor>/<driver>=<file>"},
		{name: "upper case vendor", mutate: func(o *Options) { o.Drivers = []string{"Example.com/nfs=" + src} }, wantErr: `invalid vendor "Example.com"`},
		{name: "vendor with tilde", mutate: func(o *Options) { o.Drivers = []string{"a~b~c=" + src} }, wantErr: `invalid driver name "b~c"`},
		{name: "driver with slash", mutate: func(o *Options) { o.Drivers = []string{"example.com/a/b=" + src} }, wantErr: `invalid driver name "a/b"`},
		{name: "hidden driver", mutate: func(o *Options) { o.Drivers = []string{"example.com/.nfs=" + src} }, wantErr: `invalid driver name ".nfs"`},
		{name: "empty vendor", mutate: func(o *Options) { o.Drivers = []string{"/nfs=" + src} }, wantErr: `invalid vendor ""`},
		{name: "missing source", mutate: func(o *Options) { o.Drivers = []string{"example.com/nfs=/nonexistent"} }, wantErr: "no such file"},
		{name: "source is a directory", mutate: func(o *Options) { o.Drivers = []string{"example.com/nfs=" + t.TempDir()} }, wantErr: "not a regular file"},
		{name: "duplicate", mutate: func(o *Options) { o.Drivers = []string{"example.com/nfs=" + src, "example.com~nfs=" + src} }, wantErr: "given twice"},
		{name: "bad mode", mutate: func(o *Options) { o.Drivers = []string{"example.com/nfs=" + src}; o.Mode = "0644" }, wantErr: "must be executable"},
		{name: "remove without wait", mutate: func(o *Options) {
			o.Drivers = []string{"example.com/nfs=" + src}
			o.RemoveOnExit, o.Wait = true, false
		}, wantErr: "--remove-on-exit needs --wait"},
		{name: "health address", mutate: func(o *Options) {
			o.Drivers = []string{"example.com/nfs=" + src}
			o.HealthAddress = ":8080"
		}},
		{name: "health address without port", mutate: func(o *Options) {
			o.Drivers = []string{"example.com/nfs=" + src}
			o.HealthAddress = "8080"
		}, wantErr: "invalid --health-address"},
		{name: "health address without wait", mutate: func(o *Options) {
			o.Drivers = []string{"example.com/nfs=" + src}
			o.HealthAddress, o.Wait = ":8080", false
		}, wantErr: "--health-address needs --wait"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := NewOptions()
			tc.mutate(o)
			err := o.Validate()
			if tc.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("got %v, want an error containing %q", err, tc.wantErr)
			}
		})
	}
}
