package helm

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/kubernetes/pkg/capabilities"

	"github.com/nodeplug/nodeplug/test/integration/framework"
)

const (
	muRelease   = "mount-utilities"
	muNamespace = "kube-mount"
	microk8sDir = "/var/snap/microk8s/common/var/lib/kubelet"
)

// TestMountUtilitiesHelmChart drives deploy/helm/mount-utilities through a
// release's life with the helm command against a real apiserver, which
// also compiles the admission policy's CEL: install with the defaults, an
// upgrade that moves the kubelet's directory (microk8s), an upgrade with a
// relative kubeletDir that is refused, and an uninstall that leaves nothing
// but the namespace the operator made.
func TestMountUtilitiesHelmChart(t *testing.T) {
	h := newHelm(t)
	chart := filepath.Join(filepath.Dir(h.chart), "mount-utilities")
	// The mount pods are privileged, which kube-apiserver refuses unless
	// --allow-privileged, as every real cluster sets it. The setting is
	// process-wide and taken once, from the first apiserver of the test
	// binary: start this one afresh, and leave the next to its own flags.
	capabilities.ResetForTest()
	t.Cleanup(capabilities.ResetForTest)
	cp := framework.StartAPIServer(t, "--allow-privileged=true")
	h.Kubeconfig = writeKubeconfig(t, cp.Config)
	ctx := t.Context()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: muNamespace, Labels: map[string]string{"pod-security.kubernetes.io/enforce": "privileged"}}}
	if _, err := cp.Client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	before := snapshot(ctx, t, cp.Config)

	steps := []struct {
		name    string
		args    []string
		wantErr string
		check   func(t *testing.T)
	}{
		{name: "install with the chart's defaults", args: []string{"install", muRelease, chart, "-n", muNamespace},
			check: func(t *testing.T) {
				wantKubeletDir(ctx, t, cp, "/var/lib/kubelet")
				if _, err := cp.Client.AdmissionregistrationV1().ValidatingAdmissionPolicies().Get(ctx, "nodeplug-mount-pod-creators", metav1.GetOptions{}); err != nil {
					t.Errorf("the admission policy: %v", err)
				}
				if _, err := cp.Client.RbacV1().Roles(muNamespace).Get(ctx, "nodeplug:mount-pod-exec", metav1.GetOptions{}); err != nil {
					t.Errorf("the controller-manager's Role: %v", err)
				}
			}},
		{name: "upgrade to microk8s's kubelet directory", args: []string{"upgrade", muRelease, chart, "-n", muNamespace, "--set", "kubeletDir=" + microk8sDir},
			check: func(t *testing.T) { wantKubeletDir(ctx, t, cp, microk8sDir) }},
		{name: "upgrade with a relative kubeletDir is refused", args: []string{"upgrade", muRelease, chart, "-n", muNamespace, "--set", "kubeletDir=var/lib/kubelet"},
			wantErr: `kubeletDir "var/lib/kubelet" must be the absolute path`,
			check:   func(t *testing.T) { wantKubeletDir(ctx, t, cp, microk8sDir) }},
		{name: "uninstall leaves nothing", args: []string{"uninstall", muRelease, "-n", muNamespace, "--wait"},
			check: func(t *testing.T) {
				if diff := compare(before, snapshot(ctx, t, cp.Config)); diff != "" {
					t.Errorf("objects left or changed by the release:\n%s", diff)
				}
			}},
	}
	for _, s := range steps {
		// Each step builds on the one before: stop at the first failure.
		if !t.Run(s.name, func(t *testing.T) {
			out, err := h.run(t, s.args...)
			switch {
			case s.wantErr == "" && err != nil:
				t.Fatalf("helm %s: %v\n%s", strings.Join(s.args, " "), err, out)
			case s.wantErr != "" && (err == nil || !strings.Contains(out, s.wantErr)):
				t.Fatalf("helm %s: error %v, want one saying %q\n%s", strings.Join(s.args, " "), err, s.wantErr, out)
			}
			s.check(t)
		}) {
			return
		}
	}
}

// wantKubeletDir checks that the DaemonSet mounts dir, the kubelet's root
// directory, from the host at the same path.
func wantKubeletDir(ctx context.Context, t *testing.T, cp *framework.ControlPlane, dir string) {
	t.Helper()
	ds, err := cp.Client.AppsV1().DaemonSets(muNamespace).Get(ctx, "mount-utilities", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the DaemonSet: %v", err)
	}
	spec := ds.Spec.Template.Spec
	var host, mount string
	for _, v := range spec.Volumes {
		if v.Name == "kubelet-root" && v.HostPath != nil {
			host = v.HostPath.Path
		}
	}
	for _, m := range spec.Containers[0].VolumeMounts {
		if m.Name == "kubelet-root" {
			mount = m.MountPath
		}
	}
	if host != dir || mount != dir {
		t.Errorf("the kubelet's directory is mounted from %q at %q, want %s at the same path", host, mount, dir)
	}
}
