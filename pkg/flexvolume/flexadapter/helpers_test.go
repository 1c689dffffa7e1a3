package flexadapter

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	clientset "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/kubernetes/pkg/volume"
	volumetesting "k8s.io/kubernetes/pkg/volume/testing"

	"github.com/nodeplug/nodeplug/pkg/flexvolume/prober"
	"github.com/nodeplug/nodeplug/pkg/util/groupexec"
)

// recordingDriver returns a driver that appends "<command> <args...>" to
// logFile, answers init with caps and every other command with answer.
func recordingDriver(logFile, caps, answer string) string {
	return fmt.Sprintf(`#!/bin/sh
printf '%%s\n' "$*" >> %s
case "$1" in
init) echo '{"status":"Success","capabilities":%s}' ;;
attach|waitforattach) echo '{"status":"Success","device":"/dev/fake0"}' ;;
isattached) echo '{"status":"Success","attached":true}' ;;
*) echo '%s' ;;
esac
`, logFile, caps, answer)
}

const (
	success      = `{"status":"Success"}`
	notSupported = `{"status":"Not supported"}`
	failInit     = "#!/bin/sh\necho '{\"status\":\"Failure\",\"message\":\"backend down\"}'\n"
)

// install writes an executable atomically into <root>/<dirName>/<exe>.
func install(t testing.TB, root, dirName, exe, content string) {
	t.Helper()
	dir := filepath.Join(root, dirName)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	tmp := filepath.Join(dir, "."+exe)
	if err := os.WriteFile(tmp, []byte(content), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, exe)); err != nil {
		t.Fatal(err)
	}
}

// calls returns the commands logged by a recording driver.
func calls(t testing.TB, logFile string) []string {
	t.Helper()
	b, err := os.ReadFile(logFile)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
}

func fastOptions() Options {
	return Options{Options: prober.Options{
		MinScanInterval:      50 * time.Millisecond,
		InUseRecheckInterval: 20 * time.Millisecond,
	}}
}

func newTestProber(t testing.TB, root string, opts Options) *Source {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	p, err := NewSource(ctx, root, groupexec.New(), opts)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// newPluginMgr returns an upstream VolumePluginMgr using view, with a fake
// kubelet host rooted in a temp dir.
func newPluginMgr(t *testing.T, view volume.DynamicPluginProber, client clientset.Interface) (*volume.VolumePluginMgr, volume.VolumeHost) {
	t.Helper()
	if client == nil {
		client = fake.NewSimpleClientset()
	}
	host := volumetesting.NewFakeKubeletVolumeHost(t, t.TempDir(), client, nil)
	mgr := &volume.VolumePluginMgr{}
	if err := mgr.InitPlugins(nil, view, host); err != nil {
		t.Fatal(err)
	}
	return mgr, host
}

// eventually polls cond every 10 ms for at most 20 s.
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func findable(mgr *volume.VolumePluginMgr, name string) func() bool {
	return func() bool {
		_, err := mgr.FindPluginByName(name)
		return err == nil
	}
}

func attachable(mgr *volume.VolumePluginMgr, name string) func() bool {
	return func() bool {
		pl, err := mgr.FindAttachablePluginByName(name)
		return err == nil && pl != nil
	}
}
