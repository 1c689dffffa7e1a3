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

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"

	"github.com/nodeplug/nodeplug/test/e2e/framework"
	"github.com/nodeplug/nodeplug/test/utils/helmcmd"
)

// localRegistry is the name every node's containerd pulls the local
// cluster's registry by (hack/lib/registry.sh).
const localRegistry = "localhost:5000"

// TestLocalRegistryUserImage is what a user does with an image of their
// own: make local-load IMAGE=app.tar, then a pod on every node runs the
// image, pulled from the registry (imagePullPolicy Always). A tag never
// pushed fails the pod's pull with an Event that says so.
func TestLocalRegistryUserImage(t *testing.T) {
	c := framework.Connect(t)
	c.Dir(t) // make local-load pushes into the local cluster's registry
	ctx := t.Context()
	dir := t.TempDir()
	tag := rand.String(8)
	marker := "hello from user-app " + tag
	archive := filepath.Join(dir, "app.tar")
	framework.Run(ctx, t, filepath.Join(c.BinDir, "mkimage"), "-o", archive, "-name", "docker.io/e2e/user-app:"+tag,
		"-file", "/bin/busybox=/bin/busybox:0755", "-link", "/bin/sh=busybox", "-link", "/bin/echo=busybox",
		"-entrypoint", "/bin/sh", "-cmd", "-c,echo "+marker)
	load := exec.CommandContext(ctx, "make", "--no-print-directory", "local-load", "IMAGE="+archive)
	load.Dir = "../.."
	out, err := load.CombinedOutput()
	if err != nil {
		t.Fatalf("make local-load: %v\n%s", err, out)
	}
	image := localRegistry + "/e2e/user-app:" + tag
	if !strings.Contains(string(out), "image: "+image) {
		t.Fatalf("make local-load printed no %s:\n%s", image, out)
	}
	for _, n := range c.Nodes {
		pod := userImagePod("user-app-"+n.Name, image)
		c.CreatePodOn(ctx, t, pod, n.Name)
	}
	for _, n := range c.Nodes {
		name := "user-app-" + n.Name
		c.WaitForPod(ctx, t, name, 2*time.Minute, corev1.PodSucceeded)
		logs, err := c.Client.CoreV1().Pods("default").GetLogs(name, &corev1.PodLogOptions{}).DoRaw(ctx)
		if err != nil || !strings.Contains(string(logs), marker) {
			t.Errorf("node %s: the pod's log is %q (%v); want %q", n.Name, logs, err, marker)
		}
	}

	t.Run("tag never pushed", func(t *testing.T) {
		missing := userImagePod("user-app-missing", localRegistry+"/e2e/user-app:never-pushed-"+tag)
		c.CreatePodOn(ctx, t, missing, c.NodeName)
		c.RequireEvent(ctx, t, framework.EventQuery{Namespace: "default", Kind: "Pod", Name: missing.Name,
			Reason: "Failed", MessageContains: "not found"}, 2*time.Minute)
	})
}

func userImagePod(name, image string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			Containers:    []corev1.Container{{Name: "app", Image: image, ImagePullPolicy: corev1.PullAlways}},
		},
	}
}

// TestLocalPVHelmChartFromRegistry installs the provisioner the way the
// install docs do: helm install from the chart in an OCI registry, with
// no --set image. The chart local-up pushed defaults to the registry's
// image, which every node pulls.
func TestLocalPVHelmChartFromRegistry(t *testing.T) {
	c := framework.Connect(t)
	ca := filepath.Join(c.Dir(t), "pki", "ca.crt") // the local registry's CA
	ctx := t.Context()
	disks := newLPVDisks(t, c)
	vol0 := disks.addDir("vol0")
	dir := t.TempDir()
	values := filepath.Join(dir, "values.yaml")
	if err := os.WriteFile(values, []byte(fmt.Sprintf(`useJobForCleaning: true
classes:
- name: oci-fast
  hostDir: %s
  mountDir: /mnt/fast-disks
  storageClass: true
`, disks.fast)), 0o644); err != nil {
		t.Fatal(err)
	}
	h := helmcmd.Command{Bin: os.Getenv(helmcmd.Env), Kubeconfig: os.Getenv("KUBECONFIG"), Home: t.TempDir()}
	if h.Bin == "" {
		h.Bin = filepath.Join(c.BinDir, "helm")
	}
	ns := filepath.Join(dir, "namespace.yaml")
	if err := os.WriteFile(ns, []byte("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: "+lpvNamespace+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if out, err := h.Run(ctx, "uninstall", "local-volume-provisioner", "--namespace", lpvNamespace, "--wait"); err != nil {
			t.Errorf("helm uninstall: %v\n%s", err, out)
		}
		undeployLPV(t, c, ns)
	})
	// A fresh cluster, as an operator's first install: earlier tests leave
	// the unwiped-disk memory's CRD (applied without helm), which helm
	// refuses to adopt; the tests that follow apply it again.
	if _, err := c.Kubectl(ctx, "delete", "-f", "../../"+unwipedMemoryManifest, "--ignore-not-found", "--wait"); err != nil {
		t.Fatal(err)
	}
	out, err := h.Run(ctx, "install", "local-volume-provisioner",
		"oci://"+localRegistry+"/nodeplug/charts/local-volume-provisioner", "--version", "0.0.0-dev",
		"--ca-file", ca,
		"--namespace", lpvNamespace, "--create-namespace", "-f", values, "--wait", "--timeout", "3m")
	if err != nil {
		t.Fatalf("helm install oci://: %v\n%s", err, out)
	}
	pv := waitForPV(ctx, t, c, vol0, "", corev1.VolumeAvailable)
	if pv.Spec.StorageClassName != "oci-fast" {
		t.Errorf("PV %s has class %q; want oci-fast", pv.Name, pv.Spec.StorageClassName)
	}
	images, err := c.Kubectl(ctx, "-n", lpvNamespace, "get", "pods", "-o", "jsonpath={.items[*].spec.containers[*].image}")
	if err != nil {
		t.Fatal(err)
	}
	want := localRegistry + "/nodeplug/local-volume-provisioner:dev"
	for _, img := range strings.Fields(images) {
		if img != want {
			t.Errorf("a provisioner pod runs %s; want the registry's %s", img, want)
		}
	}
}
