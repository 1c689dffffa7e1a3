//go:build e2e

package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/nodeplug/nodeplug/test/e2e/framework"
)

// versionedDriver is a non-attachable driver that mounts a small tmpfs and
// writes its own version into it, so that a pod can tell which version of
// the driver served its mount.
const versionedDriver = `#!/bin/sh
case "$1" in
init) echo '{"status":"Success","capabilities":{"attach":false}}' ;;
mount)
  mkdir -p "$2" && mount -t tmpfs -o size=1m e2e-versioned "$2" && echo "@VERSION@" > "$2/version" &&
    echo '{"status":"Success"}' || echo '{"status":"Failure","message":"mount failed"}' ;;
unmount) umount "$2" 2>/dev/null; echo '{"status":"Success"}' ;;
*) echo '{"status":"Not supported"}' ;;
esac
`

const versionedName = "nodeplug.io/e2e-versioned"

// TestFlexVolumeDaemonSetStories runs the seed's four user stories against
// the running kubelet and controller-manager (both with
// --experimental-flexvolume-discovery), with drivers installed by the
// shipped DaemonSet and installer image, and no restart:
//  1. install: the shipped DaemonSet installs nodeplug.io/tmpfs, a pod mounts it;
//  2. add another driver: a second DaemonSet installs nodeplug.io/e2e-versioned, both work;
//  3. update: the second DaemonSet gets a new image, the next mount is served by the new version;
//  4. remove: deleting the DaemonSet while a pod uses the driver defers the
//     removal; the pod's teardown still works, and the driver is unloaded after.
func TestFlexVolumeDaemonSetStories(t *testing.T) {
	c := framework.Connect(t)
	requireFlexDiscovery(t, c)
	ctx := t.Context()
	flexDir := c.Node.HostPath(t, c.Node.FlexDir())

	shipped := loadDriverDaemonSet(t, c.Node.FlexDir())
	since := time.Now()
	c.CreateDaemonSet(ctx, t, shipped)

	t.Run("install", func(t *testing.T) {
		requireDriverOnEveryNode(t, c, "nodeplug.io~tmpfs/tmpfs", "")
		waitForDriverLoaded(ctx, t, c, "nodeplug.io/tmpfs", since)
		pod := flexPod("e2e-ds-tmpfs", "nodeplug.io/tmpfs", nil)
		c.CreatePod(ctx, t, pod)
		c.WaitForPod(ctx, t, pod.Name, 120*time.Second, corev1.PodRunning)
		c.RequireMountType(ctx, t, pod.Name, "/data", "tmpfs")
	})

	v1 := buildInstallerImage(ctx, t, c, framework.Image("e2e-versioned-installer:v1"), "v1")
	v2 := buildInstallerImage(ctx, t, c, framework.Image("e2e-versioned-installer:v2"), "v2")
	versioned := shipped.DeepCopy()
	versioned.Name = "e2e-versioned-driver"
	versioned.Spec.Selector.MatchLabels = map[string]string{"app": "e2e-versioned-driver"}
	versioned.Spec.Template.Labels = versioned.Spec.Selector.MatchLabels
	versioned.Spec.Template.Spec.Containers[0].Image = v1
	versioned.Spec.Template.Spec.Containers[0].Args = []string{
		"--plugin-dir=/flexmnt", "--driver=" + versionedName + "=/drivers/e2e-versioned", "--remove-on-exit",
		"--health-address=:8080"}

	parent := t
	t.Run("add another driver", func(t *testing.T) {
		since := time.Now()
		c.CreateDaemonSet(ctx, parent, versioned)
		waitForDriverLoaded(ctx, t, c, versionedName, since)
		pod := flexPod("e2e-ds-both", "nodeplug.io/tmpfs", nil)
		pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: "ver", VolumeSource: corev1.VolumeSource{
			FlexVolume: &corev1.FlexVolumeSource{Driver: versionedName}}})
		pod.Spec.Containers[0].VolumeMounts = append(pod.Spec.Containers[0].VolumeMounts,
			corev1.VolumeMount{Name: "ver", MountPath: "/ver"})
		c.CreatePod(ctx, t, pod)
		c.WaitForPod(ctx, t, pod.Name, 120*time.Second, corev1.PodRunning)
		c.RequireMountType(ctx, t, pod.Name, "/data", "tmpfs")
		c.RequireFile(ctx, t, pod.Name, "/ver/version", "v1")
	})

	t.Run("update", func(t *testing.T) {
		since := time.Now()
		if _, err := c.Kubectl(ctx, "-n", "kube-system", "set", "image", "daemonset/"+versioned.Name, "installer="+v2); err != nil {
			t.Fatal(err)
		}
		c.WaitForRollout(ctx, t, versioned.Namespace, versioned.Name)
		// Not waited for: the new pod is Ready only once v2 is in place.
		requireDriverOnEveryNode(t, c, "nodeplug.io~e2e-versioned/e2e-versioned", "echo \"v2\"")
		waitForDriverLoaded(ctx, t, c, versionedName, since)
		pod := flexPod("e2e-ds-v2", versionedName, nil)
		c.CreatePod(ctx, t, pod)
		c.WaitForPod(ctx, t, pod.Name, 120*time.Second, corev1.PodRunning)
		c.RequireFile(ctx, t, pod.Name, "/data/version", "v2")
	})

	t.Run("remove", func(t *testing.T) {
		user := flexPod("e2e-ds-user", versionedName, nil)
		c.CreatePod(ctx, t, user)
		c.WaitForPod(ctx, t, user.Name, 120*time.Second, corev1.PodRunning)
		since := time.Now()
		c.DeleteDaemonSet(ctx, t, versioned.Namespace, versioned.Name)
		waitForHostFileGone(t, filepath.Join(flexDir, "nodeplug.io~e2e-versioned", "e2e-versioned"))
		c.RequireEvent(ctx, t, flexDriverEvent(c, "FlexVolumeDriverRemovalDeferred", versionedName, since), 60*time.Second)
		// Teardown works with the kept driver: the pod goes away.
		c.DeletePod(t, user.Name)
		c.RequireEvent(ctx, t, flexDriverEvent(c, "FlexVolumeDriverRemoved", versionedName, since), 60*time.Second)
		late := flexPod("e2e-ds-late", versionedName, nil)
		c.CreatePod(ctx, t, late)
		c.RequireEvent(ctx, t, framework.EventQuery{Namespace: "default", Name: late.Name, Reason: "FailedMount"}, 90*time.Second)
	})
}

func requireFlexDiscovery(t *testing.T, c *framework.Cluster) {
	t.Helper()
	c.RequireFlag(t, "kubelet", "--experimental-flexvolume-discovery")
	c.RequireFlag(t, "kube-controller-manager", "--experimental-flexvolume-discovery")
}

// flexPod returns a busybox pod with one flexVolume of driver at /data.
func flexPod(name, driver string, opts map[string]string) *corev1.Pod {
	pod := framework.BusyboxPod(name, "sleep 3600")
	pod.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}
	pod.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
		FlexVolume: &corev1.FlexVolumeSource{Driver: driver, Options: opts}}}}
	return pod
}

// loadDriverDaemonSet reads the shipped DaemonSet and points its hostPath at
// the local cluster's plugin directory.
func loadDriverDaemonSet(t testing.TB, flexDir string) *appsv1.DaemonSet {
	t.Helper()
	raw, err := os.ReadFile("../../deploy/flexvolume/daemonset.yaml")
	if err != nil {
		t.Fatal(err)
	}
	ds := &appsv1.DaemonSet{}
	if err := yaml.UnmarshalStrict(framework.ManifestImages(raw), ds); err != nil {
		t.Fatalf("deploy/flexvolume/daemonset.yaml: %v", err)
	}
	ds.Spec.Template.Spec.Volumes[0].HostPath.Path = flexDir
	return ds
}

// buildInstallerImage builds an installer image holding versionedDriver at
// version, with the project's installer binary, and imports it into the
// cluster's containerd.
func buildInstallerImage(ctx context.Context, t testing.TB, c *framework.Cluster, ref, version string) string {
	t.Helper()
	dir := t.TempDir()
	driver := filepath.Join(dir, "e2e-versioned")
	if err := os.WriteFile(driver, []byte(strings.ReplaceAll(versionedDriver, "@VERSION@", version)), 0o755); err != nil {
		t.Fatal(err)
	}
	tarball := filepath.Join(dir, "image.tar")
	framework.Run(ctx, t, filepath.Join(c.BinDir, "mkimage"), "-o", tarball, "-name", ref,
		"-file", "/flexvolume-installer="+filepath.Join(c.BinDir, "flexvolume-installer")+":0755",
		"-file", "/drivers/e2e-versioned="+driver+":0755",
		"-dir", "/flexmnt", "-entrypoint", "/flexvolume-installer", "-env", "PATH=/")
	for _, n := range c.Nodes {
		framework.Run(ctx, t, "ctr", "--address", n.ContainerdSocket(t), "-n", "k8s.io", "images", "import", tarball)
	}
	return ref
}

// requireDriverOnEveryNode checks, without waiting, that every node holds
// rel (a path under its flex dir) containing contains.
func requireDriverOnEveryNode(t testing.TB, c *framework.Cluster, rel, contains string) {
	t.Helper()
	for _, n := range c.Nodes {
		b, err := n.ReadFile(context.Background(), filepath.Join(n.FlexDir(), rel))
		switch {
		case err != nil:
			t.Errorf("node %s: driver not installed when the rollout was done: %v", n.Name, err)
		case !strings.Contains(string(b), contains):
			t.Errorf("node %s: %s does not contain %q when the rollout was done", n.Name, rel, contains)
		}
	}
}

func waitForHostFileGone(t testing.TB, path string) {
	t.Helper()
	if err := framework.Poll(t.Context(), 60*time.Second, func(context.Context) bool { _, err := os.Stat(path); return os.IsNotExist(err) }); err != nil {
		t.Fatalf("%s was not removed: %v", path, err)
	}
}

// waitForDriverLoaded waits until the kubelet reports driver loaded (a Node
// event) after since. A pod created before that would fail its first mount
// with "no volume plugin matched", and the kubelet retries the mount of
// such a pod only after about two minutes.
func waitForDriverLoaded(ctx context.Context, t testing.TB, c *framework.Cluster, driver string, since time.Time) {
	t.Helper()
	c.RequireEvent(ctx, t, flexDriverEvent(c, "FlexVolumeDriverLoaded", driver, since), 60*time.Second)
}

// flexDriverEvent is the Event with reason on the first node whose message
// names driver, last seen at or after since.
func flexDriverEvent(c *framework.Cluster, reason, driver string, since time.Time) framework.EventQuery {
	return framework.EventQuery{Kind: "Node", Name: c.NodeName, Reason: reason, MessageContains: driver + " ", Since: since}
}

// TestFlexVolumeAttachable: the shipped attachable driver nodeplug.io/loop,
// installed by the shipped DaemonSet, serves a pod. The controller-manager
// calls attach (the node reports the volume attached), the kubelet calls
// waitforattach and mountdevice (a loop device with ext4 at /data), and
// deleting the pod detaches the volume again.
func TestFlexVolumeAttachable(t *testing.T) {
	c := framework.Connect(t)
	requireFlexDiscovery(t, c)
	ctx := t.Context()
	since := time.Now()
	c.CreateDaemonSet(ctx, t, loadDriverDaemonSet(t, c.Node.FlexDir()))
	if !c.Node.OnHost() {
		// The controller-manager attaches: the operator installs the driver
		// on the control plane too, which runs no DaemonSet pod here.
		loop, err := os.ReadFile(filepath.Join("..", "..", "deploy", "flexvolume", "drivers", "nodeplug.io~loop", "loop"))
		if err != nil {
			t.Fatal(err)
		}
		installDriverAt(t, filepath.Join(c.ControllerFlexDir(t), "nodeplug.io~loop"), "loop", string(loop))
	}
	waitForDriverLoaded(ctx, t, c, "nodeplug.io/loop", since)
	// The driver runs on the node: its images go where both see them.
	images := filepath.Join(c.Dir(t), "shared", "attachable-loop")
	t.Cleanup(func() { _ = os.RemoveAll(images) })
	pod := flexPod("e2e-loop", "nodeplug.io/loop", map[string]string{"size": "32M", "dir": images})
	pod.Spec.Volumes[0].Name = "e2eloop"
	pod.Spec.Containers[0].VolumeMounts[0].Name = "e2eloop"
	c.CreatePod(ctx, t, pod)
	c.WaitForPod(ctx, t, pod.Name, 120*time.Second, corev1.PodRunning)
	c.RequireMountType(ctx, t, pod.Name, "/data", "ext4")
	if _, err := c.Kubectl(ctx, "exec", pod.Name, "--", "sh", "-c", "echo data > /data/f && sync"); err != nil {
		t.Fatal(err)
	}
	if !attached(ctx, t, c, "nodeplug.io/loop") {
		t.Fatalf("node %s does not report a nodeplug.io/loop volume attached", c.NodeName)
	}
	c.DeletePod(t, pod.Name)
	if err := framework.Poll(t.Context(), 120*time.Second, func(context.Context) bool { return !attached(ctx, t, c, "nodeplug.io/loop") }); err != nil {
		t.Fatalf("nodeplug.io/loop volume still attached after the pod is gone: %v", err)
	}
	if _, err := os.Stat(filepath.Join(images, "e2eloop.img")); err != nil {
		t.Fatalf("the driver's image file: %v", err)
	}
}

// attached reports whether the node reports a volume of driver attached
// (false when the Node cannot be read).
func attached(ctx context.Context, t testing.TB, c *framework.Cluster, driver string) bool {
	ok, err := c.NodeAttached(ctx, c.NodeName, func(v string) bool { return strings.HasPrefix(v, driver+"/") })
	if err != nil {
		t.Logf("%v", err)
	}
	return ok
}
