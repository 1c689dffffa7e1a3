//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilexec "k8s.io/utils/exec"
	"sigs.k8s.io/yaml"

	"github.com/nodeplug/nodeplug/pkg/mountpod"
	"github.com/nodeplug/nodeplug/pkg/mountpod/podexec"
	"github.com/nodeplug/nodeplug/test/e2e/framework"
)

const (
	mountNamespace   = "kube-mount"
	mountDaemonSet   = "mount-utilities"
	mountPodSelector = "app=mount-utilities"
	// defaultKubeletRoot is the kubelet root dir the shipped DaemonSet
	// mounts; the local cluster's is ${LOCAL_UP_DIR}/kubelet.
	defaultKubeletRoot = "/var/lib/kubelet"
	// execPerCall bounds each call of the benchmark.
	execPerCall = 30 * time.Second
)

// execPath is one way of running a utility. run returns the command's
// output; a non-zero exit is an error.
type execPath struct {
	name string
	run  func(ctx context.Context, argv []string) (stdout, stderr []byte, err error)
}

// execSamples is what one path measured: its latencies and, read from
// runtime.MemStats around each call, the test process's allocations.
type execSamples struct {
	lat           []time.Duration
	bytes, allocs uint64
}

// BenchmarkMountPodExec runs one utility call (true, mkfs.ext4 -V) in the
// mount-utilities pod of the local cluster's node three ways, side by side,
// with runc exec as the floor:
//
//   - host: fork/exec on the node through k8s.io/utils/exec;
//   - cri: the CRI's ExecSync on containerd's socket (podexec.CRIExecutor),
//     what the kubelet's VolumeExec uses;
//   - api: the API server's pods/exec (podexec.APIExecutor), what a process
//     off the node (the controller-manager) uses: apiserver -> kubelet ->
//     the runtime's streaming server;
//   - runc: `runc --root <containerd's runc root> exec <id> <cmd>`, the
//     floor under the CRI path (no containerd, no shim).
//
// Each iteration runs every path once, in an order rotated per iteration, so
// that all paths see the same machine state. It reports p50 and p99 of each
// path ("<path>-p50-ms", "<path>-p99-ms"), api-p50 / cri-p50 ("api/cri-p50")
// and cri-p50 / runc-p50 ("cri/runc-p50"), and per path the test process's
// bytes and allocations per call ("<path>-B/call", "<path>-allocs/call";
// background goroutines count too, so these are approximate). ns/op, B/op
// and allocs/op are one round of all paths.
//
// It uses a Ready pod labelled app=mount-utilities in kube-mount on the
// node, or applies deploy/mount-utilities (kubelet root dir replaced by the
// local cluster's) and deletes what it created at the end. The image
// docker.io/nodeplug/mount-utilities:1 must be in the cluster's containerd
// (make local-up builds and imports it). Run it with -benchtime 200x (see
// docs/benchmarks.md); it is not part of the e2e tier's go test run.
func BenchmarkMountPodExec(b *testing.B) {
	c := framework.Connect(b)
	if !c.Node.OnHost() {
		// Its runc rows run runc on the host against the host's containerd state.
		b.Skip("BenchmarkMountPodExec measures the node on the host: run it on make local-up NODES=1")
	}
	ctx := b.Context()
	pod := ensureMountPod(ctx, b, c)
	target, err := mountpod.TargetFor(pod)
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("mount pod %s, container ID %s", target, target.ContainerID)

	cri, api := benchExecutors(b, c)
	host := utilexec.New()

	paths := []execPath{
		{"host", func(ctx context.Context, argv []string) ([]byte, []byte, error) {
			return runHost(ctx, host, argv)
		}},
		{"cri", func(ctx context.Context, argv []string) ([]byte, []byte, error) {
			return cri.ExecInPod(ctx, target, argv, execPerCall)
		}},
		{"api", func(ctx context.Context, argv []string) ([]byte, []byte, error) {
			return api.ExecInPod(ctx, target, argv, execPerCall)
		}},
	}
	if root, err := runcRoot(b, c, target.ContainerID); err != nil {
		b.Logf("no runc floor: %v", err)
	} else {
		b.Logf("runc root %s", root)
		paths = append(paths, execPath{"runc", func(ctx context.Context, argv []string) ([]byte, []byte, error) {
			return runHost(ctx, host, append([]string{"runc", "--root", root, "exec", target.ContainerID}, argv...))
		}})
	}

	for _, argv := range [][]string{{"true"}, {"mkfs.ext4", "-V"}} {
		b.Run(strings.Join(argv, " "), func(b *testing.B) {
			benchExecPaths(b, paths, argv)
		})
	}
}

func benchExecPaths(b *testing.B, paths []execPath, argv []string) {
	ctx := b.Context()
	call := func(p execPath) {
		cctx, cancel := context.WithTimeout(ctx, execPerCall)
		defer cancel()
		stdout, stderr, err := p.run(cctx, argv)
		if err != nil {
			b.Fatalf("%s: %q: %v\nstdout: %s\nstderr: %s", p.name, argv, err, stdout, stderr)
		}
		if argv[0] == "mkfs.ext4" && !bytes.Contains(stderr, []byte("mke2fs")) && !bytes.Contains(stdout, []byte("mke2fs")) {
			b.Fatalf("%s: %q printed no version\nstdout: %s\nstderr: %s", p.name, argv, stdout, stderr)
		}
	}
	// One call per path first: the CRI executor connects on first use.
	for _, p := range paths {
		call(p)
	}
	names := make([]string, len(paths))
	for j, p := range paths {
		names[j] = p.name
	}
	p50 := rotatePaths(b, names, func(j, _ int) { call(paths[j]) })
	if p50 == nil {
		return
	}
	b.ReportMetric(p50["api"]/p50["cri"], "api/cri-p50")
	if r, ok := p50["runc"]; ok {
		b.ReportMetric(p50["cri"]/r, "cri/runc-p50")
	}
}

// runHost runs argv on the node, with its outputs apart as the pod paths
// return them.
func runHost(ctx context.Context, host utilexec.Interface, argv []string) ([]byte, []byte, error) {
	var stdout, stderr bytes.Buffer
	cmd := host.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.SetStdout(&stdout)
	cmd.SetStderr(&stderr)
	err := cmd.Run()
	return stdout.Bytes(), stderr.Bytes(), err
}

// quantile returns the q-quantile of d by nearest rank.
func quantile(d []time.Duration, q float64) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	i := int(float64(len(s))*q+0.999999) - 1
	return s[min(max(i, 0), len(s)-1)]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// runcRoot returns the runc state root under which containerd's runc v2
// shim created container id: the "root" of the shim's runc options in the
// task bundle (${LOCAL_UP_DIR}/containerd/state/io.containerd.runtime.v2.task/
// k8s.io/<id>/options.json) if it has one, else the shim's built-in
// /run/containerd/runc, each followed by the namespace. containerd 1.6's
// shim does not derive it from containerd's state dir.
func runcRoot(b *testing.B, c *framework.Cluster, id string) (string, error) {
	const ns = "k8s.io"
	if c.Mode == framework.ModeExisting {
		return "", fmt.Errorf("the task bundle of %s is on the local cluster's host only", id)
	}
	bundle := filepath.Join(c.Dir(b), "containerd", "state", "io.containerd.runtime.v2.task", ns, id)
	if _, err := os.Stat(bundle); err != nil {
		return "", fmt.Errorf("task bundle of %s: %w", id, err)
	}
	var candidates []string
	if raw, err := os.ReadFile(filepath.Join(bundle, "options.json")); err == nil {
		var opts struct {
			Root string `json:"root"`
		}
		if json.Unmarshal(raw, &opts) == nil && opts.Root != "" {
			candidates = append(candidates, filepath.Join(opts.Root, ns))
		}
	}
	candidates = append(candidates, filepath.Join("/run/containerd/runc", ns))
	for _, root := range candidates {
		if _, err := os.Stat(filepath.Join(root, id, "state.json")); err == nil {
			return root, nil
		}
	}
	return "", fmt.Errorf("no runc state.json for %s under %v", id, candidates)
}

// ensureMountPod returns a Ready mount-utilities pod on the node, applying
// deploy/mount-utilities first if there is none; what it creates is deleted
// when b ends.
func ensureMountPod(ctx context.Context, b *testing.B, c *framework.Cluster) *corev1.Pod {
	b.Helper()
	if pod := readyMountPod(ctx, c); pod != nil {
		b.Logf("using existing mount pod %s/%s", pod.Namespace, pod.Name)
		return pod
	}
	ds := loadMountDaemonSet(b, c.Node.RootDir())
	image := ds.Spec.Template.Spec.Containers[0].Image
	requireImage(ctx, b, c, image)

	createdNS := false
	nsObj := &corev1.Namespace{}
	mustReadManifest(b, "../../deploy/mount-utilities/namespace.yaml", nsObj)
	if _, err := c.Client.CoreV1().Namespaces().Create(ctx, nsObj, metav1.CreateOptions{}); err == nil {
		createdNS = true
	} else if !apierrors.IsAlreadyExists(err) {
		b.Fatalf("create namespace %s: %v", nsObj.Name, err)
	}
	createdDS := false
	if _, err := c.Client.AppsV1().DaemonSets(mountNamespace).Create(ctx, ds, metav1.CreateOptions{}); err == nil {
		createdDS = true
	} else if !apierrors.IsAlreadyExists(err) {
		b.Fatalf("create daemonset %s/%s: %v", mountNamespace, ds.Name, err)
	}
	b.Cleanup(func() { removeMountUtilities(b, c, createdDS, createdNS) })

	var pod *corev1.Pod
	err := framework.Poll(ctx, 120*time.Second, func(ctx context.Context) bool {
		pod = readyMountPod(ctx, c)
		return pod != nil
	})
	if err != nil {
		out, _ := c.Kubectl(ctx, "-n", mountNamespace, "describe", "pods", "-l", mountPodSelector)
		b.Fatalf("no Ready %s pod in %s on %s within 120 s\n%s", mountPodSelector, mountNamespace, c.NodeName, out)
	}
	b.Logf("created mount pod %s/%s (daemonset created: %v, namespace created: %v)", pod.Namespace, pod.Name, createdDS, createdNS)
	return pod
}

// readyMountPod returns the mount-utilities pod mountpod would choose on
// the node, or nil.
func readyMountPod(ctx context.Context, c *framework.Cluster) *corev1.Pod {
	list, err := c.Client.CoreV1().Pods(mountNamespace).List(ctx, metav1.ListOptions{LabelSelector: mountPodSelector})
	if err != nil {
		return nil
	}
	var ready []*corev1.Pod
	for i := range list.Items {
		if mountpod.Qualifies(&list.Items[i], mountNamespace, c.NodeName) {
			ready = append(ready, &list.Items[i])
		}
	}
	return mountpod.Choose(ready)
}

// loadMountDaemonSet reads the shipped DaemonSet and points its kubelet
// root dir volume (host path and mount path) at kubeletRoot.
func loadMountDaemonSet(b *testing.B, kubeletRoot string) *appsv1.DaemonSet {
	b.Helper()
	ds := &appsv1.DaemonSet{}
	mustReadManifest(b, "../../deploy/mount-utilities/daemonset.yaml", ds)
	spec := &ds.Spec.Template.Spec
	replaced := 0
	for i, v := range spec.Volumes {
		if v.HostPath != nil && v.HostPath.Path == defaultKubeletRoot {
			spec.Volumes[i].HostPath.Path = kubeletRoot
			replaced++
		}
	}
	for i := range spec.Containers {
		for j, m := range spec.Containers[i].VolumeMounts {
			if m.MountPath == defaultKubeletRoot {
				spec.Containers[i].VolumeMounts[j].MountPath = kubeletRoot
				replaced++
			}
		}
	}
	if replaced != 2 {
		b.Fatalf("deploy/mount-utilities/daemonset.yaml: %d uses of %s replaced, want the hostPath and the mountPath", replaced, defaultKubeletRoot)
	}
	return ds
}

func mustReadManifest(b *testing.B, file string, into any) {
	b.Helper()
	raw, err := os.ReadFile(file)
	if err != nil {
		b.Fatal(err)
	}
	if err := yaml.UnmarshalStrict(framework.ManifestImages(raw), into); err != nil {
		b.Fatalf("%s: %v", file, err)
	}
}

// requireImage fails b unless the cluster's containerd has image: the
// DaemonSet's pull policy is IfNotPresent and the local cluster has no
// registry.
func requireImage(ctx context.Context, b *testing.B, c *framework.Cluster, image string) {
	b.Helper()
	cmd := utilexec.New().CommandContext(ctx, "ctr", "--address", c.Node.ContainerdSocket(b),
		"-n", "k8s.io", "images", "ls", "-q")
	out, err := cmd.Output()
	if err != nil {
		b.Fatalf("ctr images ls: %v", err)
	}
	if !slices.Contains(strings.Fields(string(out)), image) {
		b.Fatalf("the local cluster's containerd has no image %s; make local-up builds and imports it "+
			"(hack/lib/images.sh, np::images::build_mount_utilities)", image)
	}
}

// removeMountUtilities deletes the DaemonSet and the namespace if this
// benchmark created them, and waits until they are gone.
func removeMountUtilities(b *testing.B, c *framework.Cluster, ds, ns bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if ds {
		if _, err := c.Kubectl(ctx, "-n", mountNamespace, "delete", "daemonset", mountDaemonSet,
			"--ignore-not-found", "--wait", "--cascade=foreground", "--timeout=120s"); err != nil {
			b.Errorf("delete daemonset %s/%s: %v", mountNamespace, mountDaemonSet, err)
		}
	}
	if ns {
		err := c.Client.CoreV1().Namespaces().Delete(ctx, mountNamespace, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			b.Errorf("delete namespace %s: %v", mountNamespace, err)
			return
		}
		err = framework.Poll(ctx, 0, func(ctx context.Context) bool {
			_, err := c.Client.CoreV1().Namespaces().Get(ctx, mountNamespace, metav1.GetOptions{})
			return apierrors.IsNotFound(err)
		})
		if err != nil {
			b.Errorf("namespace %s still exists: %v", mountNamespace, errors.Join(err, ctx.Err()))
		}
	}
}

// rotatePaths runs call(path index, iteration) for every path once per
// benchmark iteration, rotating their order each time so that all paths see
// the same machine state, and reports each path's p50, p99 and allocations
// per call. It returns the p50s in ms by name, or nil without samples.
func rotatePaths(b *testing.B, names []string, call func(j, i int)) map[string]float64 {
	samples := make([]execSamples, len(names))
	var before, after runtime.MemStats
	for i := 0; b.Loop(); i++ {
		for k := range names {
			j := (i + k) % len(names)
			runtime.ReadMemStats(&before)
			start := time.Now()
			call(j, i)
			d := time.Since(start)
			runtime.ReadMemStats(&after)
			s := &samples[j]
			s.lat = append(s.lat, d)
			s.bytes += after.TotalAlloc - before.TotalAlloc
			s.allocs += after.Mallocs - before.Mallocs
		}
	}
	p50 := map[string]float64{}
	for j, name := range names {
		s := samples[j]
		if len(s.lat) == 0 {
			return nil
		}
		p50[name] = ms(quantile(s.lat, 0.50))
		b.ReportMetric(p50[name], name+"-p50-ms")
		b.ReportMetric(ms(quantile(s.lat, 0.99)), name+"-p99-ms")
		b.ReportMetric(float64(s.bytes)/float64(len(s.lat)), name+"-B/call")
		b.ReportMetric(float64(s.allocs)/float64(len(s.lat)), name+"-allocs/call")
	}
	return p50
}

// benchExecutors returns the two mount-pod executors the benchmarks compare:
// CRI ExecSync on the local cluster's containerd, and the API's pods/exec.
func benchExecutors(b *testing.B, c *framework.Cluster) (*podexec.CRIExecutor, *podexec.APIExecutor) {
	b.Helper()
	cri, err := podexec.NewCRIExecutor(c.Node.ContainerdSocket(b), 0)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = cri.Close() })
	return cri, podexec.NewAPIExecutor(c.Config, c.Client.CoreV1().RESTClient(), nil, 0)
}
