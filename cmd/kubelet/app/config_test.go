package app

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
)

const header = "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n"

// TestConfigPrecedence: the config file replaces flag defaults, drop-ins
// patch the file in lexical order, and flags on the command line win over
// both; feature gates set only in the file survive flag gates.
func TestConfigPrecedence(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "kubelet.yaml")
	writeFile(t, file, header+"maxPods: 50\nvolumePluginDir: /from/file\nfeatureGates: {ContainerCheckpoint: false}\n")
	writeFile(t, filepath.Join(dir, "conf.d", "20-b.conf"), header+"maxPods: 60\n")
	writeFile(t, filepath.Join(dir, "conf.d", "10-a.conf"), header+"maxPods: 55\nserializeImagePulls: false\n")
	writeFile(t, filepath.Join(dir, "conf.d", "README"), "not a drop-in")

	cases := map[string]struct {
		args          []string
		wantMaxPods   int32
		wantPluginDir string
	}{
		"file only":            {[]string{"--config", file}, 50, "/from/file"},
		"drop-ins over file":   {[]string{"--config", file, "--config-dir", filepath.Join(dir, "conf.d")}, 60, "/from/file"},
		"flag over everything": {[]string{"--config", file, "--config-dir", filepath.Join(dir, "conf.d"), "--max-pods=70", "--feature-gates=CSIVolumeHealth=true"}, 70, "/from/file"},
		"flag over file":       {[]string{"--volume-plugin-dir=/from/flag", "--config", file}, 50, "/from/flag"},
		// A nodeplug switch given without a value neither swallows the
		// flag after it nor fails as the last argument.
		"switch before a flag": {[]string{"--config", file, "--experimental-flexvolume-discovery", "--max-pods=70"}, 70, "/from/file"},
		"switch last":          {[]string{"--config", file, "--max-pods=70", "--experimental-local-volume-identity-check"}, 70, "/from/file"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c, err := newCommand()
			if err != nil {
				t.Fatal(err)
			}
			if err := c.all.Parse(tc.args); err != nil {
				t.Fatal(err)
			}
			kc, skipped, err := loadConfig(context.Background(), c.flags, c.config, c.all, tc.args)
			if err != nil {
				t.Fatal(err)
			}
			if kc.MaxPods != tc.wantMaxPods || kc.VolumePluginDir != tc.wantPluginDir {
				t.Errorf("maxPods=%d volumePluginDir=%s, want %d %s", kc.MaxPods, kc.VolumePluginDir, tc.wantMaxPods, tc.wantPluginDir)
			}
			if on, set := kc.FeatureGates["ContainerCheckpoint"]; !set || on {
				t.Errorf("file feature gate lost: %v", kc.FeatureGates)
			}
			if strings.Contains(name, "drop-ins") && (len(skipped) != 1 || kc.SerializeImagePulls) {
				t.Errorf("skipped=%v serializeImagePulls=%v", skipped, kc.SerializeImagePulls)
			}
		})
	}
}

func TestBadDropIns(t *testing.T) {
	cases := map[string]struct {
		body, want string
	}{
		"no kind":      {"maxPods: 5\n", "Kind"},
		"wrong kind":   {"apiVersion: v1\nkind: ConfigMap\n", "apiVersion/kind"},
		"not yaml":     {header + "maxPods: [\n", "drop-in"},
		"unknown kind": {"apiVersion: kubelet.config.k8s.io/v1beta1\nkind: CredentialProviderConfig\n", "drop-in"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			writeFile(t, filepath.Join(dir, "10.conf"), tc.body)
			c, err := newCommand()
			if err != nil {
				t.Fatal(err)
			}
			args := []string{"--config-dir", dir}
			if err := c.all.Parse(args); err != nil {
				t.Fatal(err)
			}
			_, _, err = loadConfig(context.Background(), c.flags, c.config, c.all, args)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
		})
	}
}
