package handlers

import (
	"errors"
	"os"
	"os/exec"
	"reflect"
	"strings"
	"testing"

	"k8s.io/kubernetes/pkg/volume/csi"
	volumetest "k8s.io/kubernetes/pkg/volume/testing"
)

// onVersionBump is what to do when these tests fail after k8s.io/kubernetes
// was bumped.
const onVersionBump = "upstream changed how k8s.io/kubernetes/pkg/volume/csi records that the CSI volume plugin's Init ran, " +
	"which csiPluginInitialised reads by reflection; without it every CSI plugin registration is refused. " +
	"On a version bump: read csiPlugin.Init and RegistrationHandler in pkg/volume/csi/csi_plugin.go of the new version, " +
	"change csiPluginFieldName/csiPluginInitialised (pkg/kubelet/pluginwatcher/handlers/csi.go) to what Init now sets, " +
	"then update this test and hack/upstream-internals.txt (docs/upstream-internals.md)"

// TestUpstreamCSIPluginField checks, on the very object CSI() forwards to
// (csi.PluginHandler), that the field csiPluginInitialised reads exists and
// has the type of the CSI volume plugin, the object whose Init sets it.
func TestUpstreamCSIPluginField(t *testing.T) {
	handler := reflect.TypeOf(csi.PluginHandler).Elem()
	field, ok := handler.FieldByName(csiPluginFieldName)
	if !ok {
		t.Fatalf("%s has no field %q.\n%s", handler, csiPluginFieldName, onVersionBump)
	}
	plugins := csi.ProbeVolumePlugins()
	if len(plugins) != 1 {
		t.Fatalf("csi.ProbeVolumePlugins returned %d plugins, want the CSI volume plugin alone.\n%s", len(plugins), onVersionBump)
	}
	if want := reflect.TypeOf(plugins[0]); field.Type != want {
		t.Fatalf("%s.%s is a %s, want %s (the CSI volume plugin, whose Init sets it).\n%s",
			handler, csiPluginFieldName, field.Type, want, onVersionBump)
	}
	if _, err := csiPluginField(csi.PluginHandler); err != nil {
		t.Fatalf("csiPluginField: %v.\n%s", err, onVersionBump)
	}
}

// TestUpstreamCSIInitSetsField runs the CSI volume plugin's Init, as the
// kubelet does when it builds its volume plugin manager, and checks that
// csiPluginInitialised turns true. Init changes package state of
// k8s.io/kubernetes/pkg/volume/csi for good, so it runs in a child
// process: the other tests keep an uninitialised CSI plugin.
func TestUpstreamCSIInitSetsField(t *testing.T) {
	if os.Getenv("NODEPLUG_CSI_INIT_CHILD") == "1" {
		csiInitChild(t)
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestUpstreamCSIInitSetsField$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), "NODEPLUG_CSI_INIT_CHILD=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the child process that runs the CSI plugin's Init failed: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "csi-init-child: ok") {
		t.Fatalf("the child process did not run the check:\n%s", out)
	}
}

func csiInitChild(t *testing.T) {
	if csiPluginInitialised() {
		t.Fatalf("csiPluginInitialised is true before the CSI plugin's Init ran.\n%s", onVersionBump)
	}
	if err := notReady(); !errors.Is(err, errCSINotReady) {
		t.Fatalf("before Init, the CSI handler answers %v, want %v.\n%s", err, errCSINotReady, onVersionBump)
	}
	// A host without an API client: Init skips the informers and the
	// CSINode initialisation, and still records that it ran.
	host := volumetest.NewFakeVolumeHost(t, t.TempDir(), nil, nil)
	if err := csi.ProbeVolumePlugins()[0].Init(host); err != nil {
		t.Fatalf("CSI plugin Init: %v", err)
	}
	if !csiPluginInitialised() {
		t.Fatalf("csiPluginInitialised is still false after the CSI plugin's Init ran.\n%s", onVersionBump)
	}
	t.Log("csi-init-child: ok")
}
