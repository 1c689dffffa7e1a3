package chartrender

import (
	"strings"
	"testing"
)

// TestRefusals: every upstream value nodeplug cannot honour fails the
// render with a message naming the key and the fix.
func TestRefusals(t *testing.T) {
	blockClass := map[string]any{"name": "raw", "hostDir": "/mnt/raw", "volumeMode": "Block"}
	tests := []struct {
		name   string
		values map[string]any
		want   []string
	}{
		{name: "chart 1.x common", values: map[string]any{"common": map[string]any{"useJobForCleaning": true}},
			want: []string{`"common" is a key of the upstream chart 1.x`, "common.tolerations is tolerations", "move them there"}},
		{name: "chart 1.x daemonset", values: map[string]any{"daemonset": map[string]any{"name": "x"}},
			want: []string{`"daemonset" is a key of the upstream chart 1.x`}},
		{name: "provisioner before 2.2.0", values: map[string]any{"configmap": map[string]any{"configMapName": "x"}},
			want: []string{`"configmap"`, "update-helm-values-pre-v2.2.0"}},
		{name: "Windows", values: map[string]any{"enableWindows": true},
			want: []string{"enableWindows", "Linux nodes only", "set enableWindows: false"}},
		{name: "taint removal", values: map[string]any{"removeNodeNotReadyTaint": true},
			want: []string{"removeNodeNotReadyTaint", "never updates Nodes", "set removeNodeNotReadyTaint: false"}},
		{name: "ServiceAccount not created", values: map[string]any{"serviceAccount": map[string]any{"create": false}},
			want: []string{"serviceAccount.create: false", "set serviceAccount.create: true"}},
		{name: "ServiceAccount name", values: map[string]any{"serviceAccount": map[string]any{"name": "lsp"}},
			want: []string{`serviceAccount.name "lsp"`, "fullnameOverride", "remove serviceAccount.name"}},
		{name: "extra RBAC rules", values: map[string]any{"rbac": map[string]any{"extraRules": []any{map[string]any{"apiGroups": []any{""}}}}},
			want: []string{"rbac.extraRules", "your own Role", "remove rbac.extraRules"}},
		{name: "upstream image", values: map[string]any{"image": "registry.k8s.io/sig-storage/local-volume-provisioner:v{{ .Chart.AppVersion }}"},
			want: []string{"image", "upstream provisioner's image", "remove image"}},
		{name: "host PID", values: map[string]any{"hostPID": true},
			want: []string{"hostPID", "set hostPID: false"}},
		{name: "securityContext", values: map[string]any{"securityContext": map[string]any{"privileged": true}},
			want: []string{"securityContext", "least-privilege", "remove securityContext"}},
		{name: "no /dev with a block class", values: map[string]any{"mountDevVolume": false,
			"classes": []any{map[string]any{"name": "raw", "hostDir": "/mnt/raw", "volumeMode": "Block", "blockCleanerCommand": []any{"/scripts/shred.sh"}}}},
			want: []string{"mountDevVolume: false", "set mountDevVolume: true"}},
		{name: "no classes", values: map[string]any{"classes": []any{}},
			want: []string{"classes is empty"}},
		{name: "class without name", values: map[string]any{"classes": []any{map[string]any{"hostDir": "/mnt/a"}}},
			want: []string{"classes[0] has no name"}},
		{name: "class listed twice", values: map[string]any{"classes": []any{
			map[string]any{"name": "a", "hostDir": "/mnt/a"}, map[string]any{"name": "a", "hostDir": "/mnt/b"}}},
			want: []string{`classes[1]: class "a" is listed twice`}},
		{name: "relative hostDir", values: map[string]any{"classes": []any{map[string]any{"name": "a", "hostDir": "mnt/a"}}},
			want: []string{`classes[0] (a): hostDir "mnt/a" must be an absolute path`}},
		{name: "bad volumeMode", values: map[string]any{"classes": []any{map[string]any{"name": "a", "hostDir": "/mnt/a", "volumeMode": "block"}}},
			want: []string{`volumeMode "block" must be Filesystem or Block`}},
		{name: "Block class without cleaner", values: map[string]any{"classes": []any{blockClass}},
			want: []string{"classes[0] (raw)", "needs blockCleanerCommand", "/scripts/quick_reset.sh"}},
		{name: "fsType class without cleaner", values: map[string]any{"classes": []any{map[string]any{"name": "fs", "hostDir": "/mnt/fs", "fsType": "ext4"}}},
			want: []string{"classes[0] (fs)", "needs blockCleanerCommand"}},
		{name: "unknown class key", values: map[string]any{"classes": []any{map[string]any{"name": "ssd", "hostDir": "/mnt/ssd", "diskSelecter": map[string]any{}}}},
			want: []string{`classes[0] (ssd): key "diskSelecter" is not a class key of this chart`, "diskSelector", "remove it or correct its name"}},
		{name: "diskSelector not a map", values: map[string]any{"classes": []any{map[string]any{"name": "ssd", "volumeMode": "Block",
			"blockCleanerCommand": []any{"/scripts/shred.sh"}, "diskSelector": "rotational=false"}}},
			want: []string{"classes[0] (ssd): diskSelector must be a map"}},
		{name: "link directory in /dev/disk with another mountDir", values: map[string]any{"classes": []any{map[string]any{"name": "ssd", "volumeMode": "Block",
			"blockCleanerCommand": []any{"/scripts/shred.sh"}, "diskSelector": map[string]any{}, "mountDir": "/links"}}},
			want: []string{`classes[0] (ssd): mountDir "/links" must equal hostDir /dev/disk/by-id`}},
		{name: "Recycle reclaim policy", values: map[string]any{"classes": []any{map[string]any{"name": "a", "hostDir": "/mnt/a",
			"storageClass": map[string]any{"reclaimPolicy": "Recycle"}}}},
			want: []string{`storageClass.reclaimPolicy "Recycle" must be Delete or Retain`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Render(Options{ChartDir: DefaultChartDir("."), Release: testRelease, Namespace: testNS, Values: tc.values})
			if err == nil {
				t.Fatal("the chart rendered; want a refusal")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

// TestAccepted: upstream keys with no effect, or mapped, render cleanly.
func TestAccepted(t *testing.T) {
	tests := []struct {
		name   string
		values map[string]any
	}{
		{name: "keys with no effect", values: map[string]any{"useJobForCleaning": true, "useNodeNameOnly": true, "minResyncPeriod": "1h", "privileged": false}},
		{name: "no /dev without device classes", values: map[string]any{"mountDevVolume": false,
			"classes": []any{map[string]any{"name": "a", "hostDir": "/mnt/a"}}}},
		{name: "Windows keys while Windows is off", values: map[string]any{"nodeSelectorWindows": map[string]any{"a": "b"}}},
		{name: "rbac.create false", values: map[string]any{"rbac": map[string]any{"create": false}}},
		{name: "unknown keys are ignored as upstream does", values: map[string]any{"someFutureKey": 1}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := render(t, testRelease, testNS, tc.values)
			r.config("local-volume-provisioner-config")
		})
	}
}
