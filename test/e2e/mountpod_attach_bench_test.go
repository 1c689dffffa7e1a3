//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nodeplug/nodeplug/pkg/flexvolume/driver"
	"github.com/nodeplug/nodeplug/pkg/mountpod"
	"github.com/nodeplug/nodeplug/pkg/mountpod/podexec"
	"github.com/nodeplug/nodeplug/pkg/util/groupexec"
	"github.com/nodeplug/nodeplug/test/e2e/framework"
)

const (
	// attachDriver is the attachable flex driver that the mount-utilities
	// image ships and its DaemonSet labels the pod for.
	attachDriver = "nodeplug.io/attach"
	// attachDriverDir is its directory name under a flex driver dir.
	attachDriverDir = "nodeplug.io~attach"
	// attachDriverSource is the driver in this repository; the test runs in
	// test/e2e.
	attachDriverSource = "../../build/mount-utilities/drivers/" + attachDriverDir + "/attach"
	// attachStateDir and attachLogDir are the driver's defaults: its
	// markers and driver.log in the mount pod.
	attachStateDir = "/var/lib/nodeplug-attach"
	attachLogDir   = "/var/log/nodeplug-attach"
	// attachDevicePrefix is what the driver's attach answers as the device.
	attachDevicePrefix = "/dev/nodeplug-attach/"
	// benchPodOnlyDriverDir stands for the controller-manager's
	// --experimental-mount-pod-driver-dir: an exec path under it runs in the
	// pod that serves the driver (at mountpod.FlexDriverDir), and fails
	// instead of falling back to the host when no pod does. It is never
	// created.
	benchPodOnlyDriverDir = "/nodeplug-bench/mount-pod-drivers"
)

// flexAttachPath is one way of running a flex call. run gets the
// iteration's index, from which it names a fresh volume.
type flexAttachPath struct {
	name string
	run  func(ctx context.Context, i int) error
}

// BenchmarkFlexAttach runs one flexvolume "attach" of nodeplug.io/attach
// through nodeplug's driver package (driver.New(...).Attach, the call the
// attach/detach controller makes) three ways, side by side:
//
//   - host: the driver script copied to a temp dir on the host as
//     <tmp>/nodeplug.io~attach/attach, run through pkg/util/groupexec:
//     what the controller-manager does for a driver installed on the
//     master. Its state and log dirs are rewritten to temp dirs;
//   - api: the Router of pkg/mountpod/podexec over the API server's
//     pods/exec (podexec.APIExecutor) with a cluster-wide pod finder,
//     ForFlexDrivers as the runner: exactly the controller-manager's path
//     with --experimental-mount-namespace, which runs the pod's copy of the
//     driver at mountpod.FlexDriverDir;
//   - cri: the same Router over the CRI's ExecSync on containerd's socket
//     (podexec.CRIExecutor) with a node-scoped finder: the kubelet's path,
//     for comparison.
//
// To split each path's time into exec transport and the driver's own work
// (sh start-up, JSON parsing with sed, marker write and rename, the
// driver.log line), the same rounds also run bare execs of true:
//
//   - host-true: /bin/true on the host through pkg/util/groupexec;
//   - api-true, cri-true: true in the same pod, ExecInPod of the executors
//     directly (no Router, no driver package).
//
// Each iteration runs every path once, in an order rotated per iteration,
// so that all paths see the same machine state. Each attach names a fresh
// volume (kubernetes.io/pvOrVolumeName "bench-<path>-<i>") attached to the
// node; nothing is detached. It reports p50 and p99 of each path
// ("<path>-p50-ms", "<path>-p99-ms"), api-p50 / host-p50 ("api/host-p50"),
// cri-p50 / host-p50 ("cri/host-p50"), and per path the test process's
// bytes and allocations per call ("<path>-B/call", "<path>-allocs/call",
// approximate as in BenchmarkMountPodExec). ns/op, B/op and allocs/op are
// one round of all paths.
//
// It uses the mount pod as BenchmarkMountPodExec does (ensureMountPod); the
// pod must carry the label flexvolume.mount.kubernetes.io/nodeplug.io_2fattach
// and its image must have the driver (make local-up builds and imports an
// image that does). pods/exec uses the test's kubeconfig (admin), not the
// controller-manager's credentials. At the end the markers of the bench
// volumes are removed from the pod; the pod's driver.log keeps one line
// per call. The host copies are in b.TempDir. Run it with -benchtime 100x;
// it is not part of the e2e tier's go test run.
func BenchmarkFlexAttach(b *testing.B) {
	// The driver's environment overrides, which the pod paths cannot pass,
	// are empty for the host path too (the script treats empty as unset).
	b.Setenv("NODEPLUG_ATTACH_STATE_DIR", "")
	b.Setenv("NODEPLUG_ATTACH_LOG_DIR", "")
	c := framework.Connect(b)
	ctx := b.Context()
	ensureMountPod(ctx, b, c)

	// The api path: the controller-manager's finder and executor.
	apiFinder := mountpod.NewFinder(mountNamespace, "")
	// The cri path: the kubelet's.
	criFinder := mountpod.NewFinder(mountNamespace, c.NodeName)
	for _, f := range []*mountpod.InformerFinder{apiFinder, criFinder} {
		if err := f.Start(ctx, c.Client); err != nil {
			b.Fatal(err)
		}
		sctx, cancel := context.WithTimeout(ctx, 60*time.Second)
		synced := f.WaitForSync(sctx)
		cancel()
		if !synced {
			b.Fatal("the mount pod cache did not sync within 60 s")
		}
	}
	label, err := mountpod.LabelKey(attachDriver)
	if err != nil {
		b.Fatal(err)
	}
	apiTarget, err := apiFinder.FindPreferring(attachDriver, c.NodeName)
	if err != nil {
		b.Fatalf("%v\nthe mount-utilities DaemonSet in the cluster predates %s: apply the current deploy/mount-utilities "+
			"(or make local-down && make local-up)", err, attachDriver)
	}
	criTarget, err := criFinder.Find(attachDriver)
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("%s (label %s): api path %s, cri path %s, container %s", attachDriver, label, apiTarget, criTarget, criTarget.ContainerID)
	if apiTarget != criTarget {
		b.Logf("the two finders chose different pods")
	}

	cri, api := benchExecutors(b, c)
	host := groupexec.New()

	inPod := path.Join(mountpod.FlexDriverDir, attachDriverDir, "attach")
	if stdout, stderr, err := api.ExecInPod(ctx, apiTarget, []string{"test", "-x", inPod}, execPerCall); err != nil {
		b.Fatalf("pod %s has no executable %s (%v; %s%s): its image predates the driver; "+
			"make local-up builds and imports the current docker.io/nodeplug/mount-utilities:1", apiTarget, inPod, err, stdout, stderr)
	}
	// Markers of an earlier, interrupted run would make attach overwrite
	// instead of create.
	removeBenchMarkers(ctx, b, api, apiTarget)
	b.Cleanup(func() {
		cctx, cancel := context.WithTimeout(context.Background(), execPerCall)
		defer cancel()
		removeBenchMarkers(cctx, b, api, apiTarget)
	})

	hostDriver := installHostAttachDriver(b)
	podDriver := filepath.Join(benchPodOnlyDriverDir, attachDriverDir, "attach")
	drivers := []struct {
		name string
		drv  driver.Driver
	}{
		{"host", driver.New(hostDriver, host, driver.Config{})},
		{"api", driver.New(podDriver, podexec.NewRouter(apiFinder, api, host, podexec.Options{}).ForFlexDrivers(benchPodOnlyDriverDir), driver.Config{})},
		{"cri", driver.New(podDriver, podexec.NewRouter(criFinder, cri, host, podexec.Options{}).ForFlexDrivers(benchPodOnlyDriverDir), driver.Config{})},
	}
	var paths []flexAttachPath
	for _, d := range drivers {
		paths = append(paths, flexAttachPath{d.name, func(ctx context.Context, i int) error {
			name := benchVolume(d.name, i)
			dev, err := d.drv.Attach(ctx, &driver.VolumeOptions{PVOrVolumeName: name}, c.NodeName)
			if err != nil {
				return err
			}
			if dev != attachDevicePrefix+name {
				return fmt.Errorf("attach of %s answered device %q, want %q", name, dev, attachDevicePrefix+name)
			}
			return nil
		}})
	}
	paths = append(paths,
		flexAttachPath{"host-true", func(ctx context.Context, _ int) error {
			stdout, stderr, err := runHost(ctx, host, []string{"/bin/true"})
			return outputErr(err, stdout, stderr)
		}},
		flexAttachPath{"api-true", func(ctx context.Context, _ int) error {
			stdout, stderr, err := api.ExecInPod(ctx, apiTarget, []string{"true"}, execPerCall)
			return outputErr(err, stdout, stderr)
		}},
		flexAttachPath{"cri-true", func(ctx context.Context, _ int) error {
			stdout, stderr, err := cri.ExecInPod(ctx, criTarget, []string{"true"}, execPerCall)
			return outputErr(err, stdout, stderr)
		}},
	)

	call := func(p flexAttachPath, i int) {
		cctx, cancel := context.WithTimeout(ctx, execPerCall)
		defer cancel()
		if err := p.run(cctx, i); err != nil {
			b.Fatalf("%s: %v", p.name, err)
		}
	}
	// One call per path first: the CRI executor connects on first use.
	// The attach paths then check through isattached that the driver
	// recorded the attachment.
	for _, p := range paths {
		call(p, -1)
	}
	for _, d := range drivers {
		name := benchVolume(d.name, -1)
		ok, err := d.drv.IsAttached(ctx, &driver.VolumeOptions{PVOrVolumeName: name}, c.NodeName)
		if err != nil || !ok {
			b.Fatalf("%s: isattached %s after attach: %v, %v", d.name, name, ok, err)
		}
	}

	names := make([]string, len(paths))
	for j, p := range paths {
		names[j] = p.name
	}
	p50 := rotatePaths(b, names, func(j, i int) { call(paths[j], i) })
	if p50 == nil {
		return
	}
	b.ReportMetric(p50["api"]/p50["host"], "api/host-p50")
	b.ReportMetric(p50["cri"]/p50["host"], "cri/host-p50")
}

// installHostAttachDriver writes the driver to
// <tmp>/nodeplug.io~attach/attach with its state and log dirs moved to
// <tmp>/state and <tmp>/log, and returns its path. b.TempDir removes all
// of it at the end.
func installHostAttachDriver(b *testing.B) string {
	b.Helper()
	raw, err := os.ReadFile(attachDriverSource)
	if err != nil {
		b.Fatal(err)
	}
	tmp := b.TempDir()
	script := string(raw)
	for _, dir := range []struct{ from, to string }{
		{attachStateDir, filepath.Join(tmp, "state")},
		{attachLogDir, filepath.Join(tmp, "log")},
	} {
		// The default in ${NODEPLUG_ATTACH_..._DIR:-<dir>}.
		from := ":-" + dir.from + "}"
		if n := strings.Count(script, from); n != 1 {
			b.Fatalf("%s: %d defaults %q, want 1; update installHostAttachDriver", attachDriverSource, n, from)
		}
		script = strings.Replace(script, from, ":-"+dir.to+"}", 1)
	}
	if strings.Contains(script, attachStateDir) || strings.Contains(script, attachLogDir) {
		b.Fatalf("%s still names %s or %s after the rewrite; update installHostAttachDriver", attachDriverSource, attachStateDir, attachLogDir)
	}
	dir := filepath.Join(tmp, attachDriverDir)
	if err := os.Mkdir(dir, 0o755); err != nil {
		b.Fatal(err)
	}
	exe := filepath.Join(dir, "attach")
	if err := os.WriteFile(exe, []byte(script), 0o755); err != nil {
		b.Fatal(err)
	}
	b.Logf("host driver %s, state %s", exe, filepath.Join(tmp, "state"))
	return exe
}

// removeBenchMarkers removes the markers of the bench volumes of the pod
// paths from the driver's state dir in the pod.
func removeBenchMarkers(ctx context.Context, b *testing.B, api *podexec.APIExecutor, t mountpod.Target) {
	script := fmt.Sprintf("rm -f %[1]s/bench-api-*.attached %[1]s/bench-cri-*.attached", attachStateDir)
	if stdout, stderr, err := api.ExecInPod(ctx, t, []string{"sh", "-c", script}, execPerCall); err != nil {
		b.Errorf("removing the bench markers in %s: %v\nstdout: %s\nstderr: %s", t, err, stdout, stderr)
	}
}

// benchVolume names the volume that iteration i of path p attaches; -1 is
// the warm-up call.
func benchVolume(p string, i int) string {
	if i < 0 {
		return "bench-" + p + "-warmup"
	}
	return fmt.Sprintf("bench-%s-%d", p, i)
}

// outputErr adds a failed command's outputs to its error.
func outputErr(err error, stdout, stderr []byte) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%w\nstdout: %s\nstderr: %s", err, stdout, stderr)
}
