//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/nodeplug/nodeplug/test/e2e/framework"
)

const (
	lpvNamespace = "local-volume-provisioner"
	lpvManagedBy = "app.kubernetes.io/managed-by=local-volume-provisioner"
	fastClass    = "local-fast"
	blockClass   = "local-block"
)

// lpvDisks are the test's disks on one node: bind-mounted directories
// under fast/ and loop devices linked from block/, below the node's shared
// directory (the watcher needs HostToContainer propagation to see new
// mounts). Paths are as the node sees them.
type lpvDisks struct {
	t                 testing.TB
	n                 *framework.Node
	base, fast, block string
	loops             []string
	// masterEnv is added to the master's container (and so, for
	// identity.UnavailableEnv, to its Jobs').
	masterEnv []corev1.EnvVar
}

func newLPVDisks(t testing.TB, c *framework.Cluster) *lpvDisks {
	return newLPVDisksOn(t, c.Node)
}

func newLPVDisksOn(t testing.TB, n *framework.Node) *lpvDisks {
	t.Helper()
	base := filepath.Join(n.SharedDir(), "localpv")
	return newLPVDisksAt(t, n, base, filepath.Join(base, "fast"), filepath.Join(base, "block"))
}

// newLPVDisksAt is newLPVDisksOn with the class directories fast and block
// where the caller says (paths in the node); the test's sources and images
// go below base, which the test's end removes.
func newLPVDisksAt(t testing.TB, n *framework.Node, base, fast, block string) *lpvDisks {
	t.Helper()
	d := &lpvDisks{t: t, n: n, base: base, fast: fast, block: block}
	for _, dir := range []string{d.fast, d.block, filepath.Join(base, "src"), filepath.Join(base, "img")} {
		if err := n.MkdirAll(context.Background(), dir); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(d.teardown)
	return d
}

// host is where the host finds the node's path p (a test that needs it
// skips on an existing cluster).
func (d *lpvDisks) host(p string) string { return d.n.HostPath(d.t, p) }

// addDir bind-mounts a new directory at fast/<name> in the node.
func (d *lpvDisks) addDir(name string) string {
	d.t.Helper()
	src, target := filepath.Join(d.base, "src", name), filepath.Join(d.fast, name)
	for _, dir := range []string{src, target} {
		if err := d.n.MkdirAll(context.Background(), dir); err != nil {
			d.t.Fatal(err)
		}
	}
	d.n.Run(context.Background(), d.t, "mount", "--bind", src, target)
	return target
}

// addLoop binds a new 64 MiB image to a loop device and links block/<name>
// to it.
func (d *lpvDisks) addLoop(name string) string {
	d.t.Helper()
	img := d.host(filepath.Join(d.base, "img", name+".img"))
	if err := os.WriteFile(img, nil, 0o600); err != nil {
		d.t.Fatal(err)
	}
	if err := os.Truncate(img, 64<<20); err != nil {
		d.t.Fatal(err)
	}
	dev := framework.AttachLoop(d.t, img)
	d.loops = append(d.loops, dev)
	link := filepath.Join(d.block, name)
	if err := os.Symlink(dev, d.host(link)); err != nil {
		d.t.Fatal(err)
	}
	return link
}

func (d *lpvDisks) teardown() {
	d.n.UnmountAll(d.t, d.base)
	for _, dev := range d.loops {
		if d.n.Remote() {
			_ = d.n.Command(context.Background(), "losetup", "-d", dev).Run()
			continue
		}
		_ = exec.Command("losetup", "-d", dev).Run()
	}
	_ = d.n.RemoveAll(context.Background(), d.base)
}

// unwipedMemoryManifest is the CRD of the memory of unwiped disks, which
// ships apart from the provisioner's kustomization.
const unwipedMemoryManifest = "deploy/local-volume-provisioner/memory/crd.yaml"

// deployLPV applies deploy/local-volume-provisioner with the test's class
// directories. The master and the watcher reach the apiserver as any pod
// does, through the kubernetes Service (kube-proxy runs in the local
// cluster). The block cleaner sleeps first, so that a test can act while a
// cleanup runs.
func deployLPV(ctx context.Context, t testing.TB, c *framework.Cluster, d *lpvDisks) {
	t.Helper()
	deployLPVWith(ctx, t, c, d, nil)
}

// deployLPVWith is deployLPV with extra keys in the provisioner's ConfigMap.
func deployLPVWith(ctx context.Context, t testing.TB, c *framework.Cluster, d *lpvDisks, extra map[string]string) {
	t.Helper()
	var docs []string
	for _, doc := range lpvManifestDocs(t) {
		docs = append(docs, patchLPVDoc(t, doc, d, extra))
	}
	file := filepath.Join(t.TempDir(), "lpv.yaml")
	if err := os.WriteFile(file, []byte(strings.Join(docs, "\n---\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	applyLPV(ctx, t, c, file)
}

// lpvManifestDocs returns the YAML documents of deploy/local-volume-provisioner,
// unchanged but for the images' registry (framework.ManifestImages), in the
// order they apply.
func lpvManifestDocs(t testing.TB) []string {
	t.Helper()
	var docs []string
	for _, f := range []string{"namespace", "crd", "rbac-master", "rbac-watcher", "admission-policy", "config", "master", "watcher"} {
		raw, err := os.ReadFile(filepath.Join("../../deploy/local-volume-provisioner", f+".yaml"))
		if err != nil {
			t.Fatal(err)
		}
		docs = append(docs, strings.Split(string(framework.ManifestImages(raw)), "\n---\n")...)
	}
	return docs
}

// applyLPV applies the provisioner's manifests in file, removes them when
// the test ends, and waits for the master and the watcher to roll out.
func applyLPV(ctx context.Context, t testing.TB, c *framework.Cluster, file string) {
	t.Helper()
	t.Cleanup(func() { undeployLPV(t, c, file) })
	// The memory of unwiped disks first, as the install docs say; it is
	// never deleted (undeployLPV forgets its entries instead).
	if _, err := c.Kubectl(ctx, "apply", "--server-side", "-f", "../../"+unwipedMemoryManifest); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Kubectl(ctx, "apply", "--server-side", "-f", file); err != nil {
		t.Fatal(err)
	}
	for _, obj := range []string{"deployment/local-volume-provisioner-master", "daemonset/local-volume-provisioner-watcher"} {
		if _, err := c.Kubectl(ctx, "-n", lpvNamespace, "rollout", "status", obj, "--timeout=120s"); err != nil {
			out, _ := c.Kubectl(ctx, "-n", lpvNamespace, "get", "pods", "-o", "wide")
			t.Fatalf("%v\n%s", err, out)
		}
	}
}

func patchLPVDoc(t testing.TB, doc string, d *lpvDisks, extra map[string]string) string {
	t.Helper()
	var meta struct {
		Kind     string            `json:"kind"`
		Metadata metav1.ObjectMeta `json:"metadata"`
	}
	if err := yaml.Unmarshal([]byte(doc), &meta); err != nil {
		t.Fatal(err)
	}
	var obj any
	switch meta.Kind {
	case "ConfigMap":
		cm := &corev1.ConfigMap{}
		mustUnmarshal(t, doc, cm)
		cm.Data["storageClassMap"] = fmt.Sprintf(`%s:
  hostDir: %s
  mountDir: /mnt/fast-disks
%s:
  hostDir: %s
  mountDir: /mnt/block-disks
  volumeMode: Block
  blockCleanerCommand: ["sh", "-c", "sleep 10 && dd if=/dev/zero of=$(LOCAL_PV_BLKDEVICE) bs=1M count=4 conv=fsync"]
`, fastClass, d.fast, blockClass, d.block)
		for k, v := range extra {
			cm.Data[k] = v
		}
		obj = cm
	case "DaemonSet":
		ds := &appsv1.DaemonSet{}
		mustUnmarshal(t, doc, ds)
		for i, v := range ds.Spec.Template.Spec.Volumes {
			switch v.Name {
			case "fast-disks":
				ds.Spec.Template.Spec.Volumes[i].HostPath.Path = d.fast
			case "block-disks":
				ds.Spec.Template.Spec.Volumes[i].HostPath.Path = d.block
			}
		}
		obj = ds
	case "Deployment":
		if len(d.masterEnv) == 0 {
			return doc
		}
		dep := &appsv1.Deployment{}
		mustUnmarshal(t, doc, dep)
		for i := range dep.Spec.Template.Spec.Containers {
			c := &dep.Spec.Template.Spec.Containers[i]
			c.Env = append(c.Env, d.masterEnv...)
		}
		obj = dep
	case "ClusterRole":
		if meta.Metadata.Name != "local-volume-provisioner-master" {
			return doc
		}
		role := &rbacv1.ClusterRole{}
		mustUnmarshal(t, doc, role)
		grantE2EClasses(role, strings.Contains(extra["storageClassMap"], "releaseClaimsOfDeletedNodesAfter"))
		obj = role
	default:
		return doc
	}
	out, err := yaml.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

// grantE2EClasses adds what rbac-master.yaml tells an admin to add for
// the classes the e2e tests configure: patch on their StorageClasses and,
// when a class releases claims of deleted nodes, the rights that takes.
func grantE2EClasses(role *rbacv1.ClusterRole, releaseClaims bool) {
	role.Rules = append(role.Rules, rbacv1.PolicyRule{APIGroups: []string{"storage.k8s.io"}, Resources: []string{"storageclasses"},
		ResourceNames: []string{keepClass, selectedClass, anySigClass, upstreamClass}, Verbs: []string{"patch"}})
	if releaseClaims {
		role.Rules = append(role.Rules,
			rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"persistentvolumeclaims"}, Verbs: []string{"delete"}},
			rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"persistentvolumeclaims/status"}, Verbs: []string{"patch"}},
			rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get"}})
	}
}

func mustUnmarshal(t testing.TB, doc string, into any) {
	t.Helper()
	if err := yaml.UnmarshalStrict([]byte(doc), into); err != nil {
		t.Fatalf("%v\n%s", err, doc)
	}
}

// undeployLPV removes the provisioner, then everything it left: PVs and
// Jobs keep finalizers that only a running master removes. It waits until
// they are gone: a PV still bound when its finalizers are cleared gets
// kubernetes.io/pv-protection back from the controller-manager and would
// stay Terminating, holding its path against the next test's install.
func undeployLPV(t testing.TB, c *framework.Cluster, file string) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	_, _ = c.Kubectl(ctx, "-n", lpvNamespace, "delete", "deployment,daemonset", "--all", "--wait", "--timeout=60s")
	// The memory of unwiped disks outlives an installation by design; the
	// next test starts with an empty one.
	var left []string
	err := framework.Poll(ctx, 2*time.Minute, func(context.Context) bool {
		left = removeLPVLeftovers(ctx, c)
		return len(left) == 0
	})
	if err != nil {
		t.Errorf("undeploy: the provisioner's objects outlived it: %s", strings.Join(left, " "))
	}
	if _, err := c.Kubectl(ctx, "delete", "-f", file, "--ignore-not-found", "--wait", "--timeout=120s"); err != nil {
		t.Logf("undeploy: %v", err)
	}
}

// removeLPVLeftovers clears the finalizers of every PV, Job and
// UnwipedDisk the provisioner labelled, deletes them, and returns those
// that were still there.
func removeLPVLeftovers(ctx context.Context, c *framework.Cluster) []string {
	var left []string
	for _, kind := range []string{"pv", "jobs", "unwipeddisks"} {
		args := []string{"get", kind, "-l", lpvManagedBy, "-o", "name"}
		if kind == "jobs" {
			args = append(args, "-n", lpvNamespace)
		}
		out, _ := c.Kubectl(ctx, args...)
		for _, name := range strings.Fields(out) {
			left = append(left, name)
			patch := []string{"patch", name, "--type=merge", "-p", `{"metadata":{"finalizers":null}}`}
			del := []string{"delete", name, "--wait=false"}
			if kind == "jobs" {
				patch, del = append(patch, "-n", lpvNamespace), append(del, "-n", lpvNamespace)
			}
			_, _ = c.Kubectl(ctx, patch...)
			_, _ = c.Kubectl(ctx, del...)
		}
	}
	return left
}

// addExt4 makes a 64 MiB ext4 file system (a random UUID) on a new loop
// device and mounts it at fast/<name> in the node, as a data disk mounted
// at its class directory. It returns the mount point and the device.
func (d *lpvDisks) addExt4(ctx context.Context, t *testing.T, name string) (string, string) {
	t.Helper()
	target := filepath.Join(d.fast, name)
	if err := os.MkdirAll(d.host(target), 0o755); err != nil {
		t.Fatal(err)
	}
	dev := d.newExt4(t, name)
	d.n.Run(ctx, t, "mount", dev, target)
	return target, dev
}

// swapExt4 unmounts the disk at target in the node and mounts a new ext4
// disk there, as an admin who replaced the disk would. It returns the new
// device.
func (d *lpvDisks) swapExt4(ctx context.Context, t *testing.T, target string) string {
	t.Helper()
	d.n.Run(ctx, t, "umount", target)
	dev := d.newExt4(t, filepath.Base(target)+"-new")
	d.n.Run(ctx, t, "mount", dev, target)
	return dev
}

func (d *lpvDisks) newExt4(t *testing.T, name string) string {
	t.Helper()
	return newExt4With(t, d, name)
}

// readExt4File reads a file of the ext4 disk dev, mounted read-only on the
// host for the time of the read.
func readExt4File(ctx context.Context, t *testing.T, n *framework.Node, dev, file string) string {
	t.Helper()
	dir := t.TempDir()
	if out, err := exec.CommandContext(ctx, "mount", "-o", "ro", dev, dir).CombinedOutput(); err != nil {
		t.Fatalf("mount %s: %v: %s", dev, err, out)
	}
	defer func() { _ = exec.Command("umount", dir).Run() }()
	b, err := os.ReadFile(filepath.Join(dir, file))
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}
