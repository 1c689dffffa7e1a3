package chartrender

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// TestUpstreamValues renders the chart with a values file written for the
// upstream chart, as helm upgrade of an upstream release does, and checks
// where each key went.
func TestUpstreamValues(t *testing.T) {
	const release, ns = "lsp", "storage"
	r := render(t, release, ns, readValues(t, "testdata/upstream-values.yaml"))
	const prefix = "lsp-local-volume-provisioner"
	cfg := r.config(prefix + "-config")
	master := r.deployment(prefix + "-master")
	watcher := r.daemonSet(prefix + "-watcher")
	mc := container(t, master.Spec.Template.Spec, "master")
	wc := container(t, watcher.Spec.Template.Spec, "watcher")

	tests := []struct {
		name  string
		check func(t *testing.T)
	}{
		{name: "classes become storageClassMap with upstream's defaults", check: func(t *testing.T) {
			fast, raw := cfg.StorageClassMap["fast-disks"], cfg.StorageClassMap["raw-disks"]
			if fast.HostDir != "/mnt/fast-disks" || fast.MountDir != "/mnt/fast-disks" || fast.FsType != "ext4" ||
				fast.NamePattern != "nvme-*" || !cmp.Equal(fast.BlockCleanerCommand, []string{"/scripts/shred.sh", "2"}) {
				t.Errorf("fast-disks: %+v", fast)
			}
			if raw.MountDir != "/raw" || raw.VolumeMode != string(corev1.PersistentVolumeBlock) {
				t.Errorf("raw-disks: %+v", raw)
			}
		}},
		{name: "setPVOwnerRef turns on deleteUnboundPVsOfDeletedNodes", check: func(t *testing.T) {
			if !cfg.DeleteUnboundPVsOfDeletedNodes {
				t.Error("deleteUnboundPVsOfDeletedNodes is false")
			}
		}},
		{name: "labelsForPV and nodeLabels", check: func(t *testing.T) {
			if cfg.LabelsForPV["team"] != "storage" || !cmp.Equal(cfg.NodeLabelsForPV, []string{"topology.kubernetes.io/zone"}) {
				t.Errorf("labelsForPV %v, nodeLabelsForPV %v", cfg.LabelsForPV, cfg.NodeLabelsForPV)
			}
		}},
		{name: "nodeSelector places the watchers and limits discovery", check: func(t *testing.T) {
			if watcher.Spec.Template.Spec.NodeSelector["storage.example.com/local-disks"] != "true" {
				t.Errorf("watcher nodeSelector %v", watcher.Spec.Template.Spec.NodeSelector)
			}
			on := &corev1.Node{}
			on.Labels = map[string]string{"storage.example.com/local-disks": "true"}
			if !cfg.NodeMatches(on) || cfg.NodeMatches(&corev1.Node{}) {
				t.Errorf("config nodeSelector %+v", cfg.NodeSelector)
			}
		}},
		{name: "tolerations go to the watchers and the Jobs", check: func(t *testing.T) {
			want := []corev1.Toleration{{Key: "storage.example.com/dedicated", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}}
			if diff := cmp.Diff(want, watcher.Spec.Template.Spec.Tolerations); diff != "" {
				t.Errorf("watcher tolerations:\n%s", diff)
			}
			if diff := cmp.Diff(want, cfg.JobTolerations); diff != "" {
				t.Errorf("jobTolerations:\n%s", diff)
			}
		}},
		{name: "the watcher mounts each hostDir at its mountDir", check: func(t *testing.T) {
			got := mountsByPath(watcher.Spec.Template.Spec, wc)
			for path, host := range map[string]string{"/mnt/fast-disks": "/mnt/fast-disks", "/raw": "/mnt/raw-disks", "/dev": "/dev"} {
				if got[path].HostPath != host {
					t.Errorf("mount %s: %+v", path, got[path])
				}
			}
			if got["/raw"].Propagation != string(corev1.MountPropagationHostToContainer) {
				t.Errorf("mount /raw has propagation %q", got["/raw"].Propagation)
			}
			if _, ok := got["/local-scripts"]; !ok {
				t.Error("additionalVolumeMounts not mounted")
			}
		}},
		{name: "pod keys apply to both pods", check: func(t *testing.T) {
			for _, spec := range []corev1.PodTemplateSpec{master.Spec.Template, watcher.Spec.Template} {
				if spec.Labels["tier"] != "storage" || spec.Annotations["example.com/owner"] != "storage-team" ||
					spec.Spec.PriorityClassName != "system-node-critical" || len(spec.Spec.ImagePullSecrets) != 1 {
					t.Errorf("pod template %+v", spec.ObjectMeta)
				}
			}
			if mc.ImagePullPolicy != corev1.PullAlways || wc.ImagePullPolicy != corev1.PullAlways || !hasArg(mc.Args, "--job-image-pull-policy=Always") {
				t.Errorf("pull policies: master %s, watcher %s, args %v", mc.ImagePullPolicy, wc.ImagePullPolicy, mc.Args)
			}
		}},
		{name: "resources, probes and update strategy are the watcher's", check: func(t *testing.T) {
			if !wc.Resources.Limits.Memory().Equal(resource.MustParse("128Mi")) {
				t.Errorf("watcher resources %v", wc.Resources)
			}
			// tcpSocket alone: the chart's own httpGet must not be merged
			// in (the apiserver refuses a probe with two handlers).
			if wc.LivenessProbe == nil || wc.LivenessProbe.TCPSocket == nil || wc.LivenessProbe.HTTPGet != nil || wc.LivenessProbe.PeriodSeconds != 60 {
				t.Errorf("watcher liveness probe %+v", wc.LivenessProbe)
			}
			if watcher.Spec.UpdateStrategy.RollingUpdate.MaxUnavailable.IntValue() != 1 {
				t.Errorf("update strategy %+v", watcher.Spec.UpdateStrategy)
			}
		}},
		{name: "the watcher is not privileged", check: func(t *testing.T) {
			if sc := wc.SecurityContext; sc == nil || (sc.Privileged != nil && *sc.Privileged) || *sc.AllowPrivilegeEscalation {
				t.Errorf("watcher securityContext %+v", sc)
			}
		}},
		{name: "StorageClasses as upstream creates them", check: func(t *testing.T) {
			fast, raw := &storagev1.StorageClass{}, &storagev1.StorageClass{}
			r.get("StorageClass", "fast-disks", fast)
			r.get("StorageClass", "raw-disks", raw)
			if *fast.ReclaimPolicy != corev1.PersistentVolumeReclaimRetain || fast.Annotations["storageclass.kubernetes.io/is-default-class"] != "true" ||
				fast.Provisioner != "kubernetes.io/no-provisioner" || *fast.VolumeBindingMode != storagev1.VolumeBindingWaitForFirstConsumer {
				t.Errorf("fast-disks StorageClass %+v", fast)
			}
			if *raw.ReclaimPolicy != corev1.PersistentVolumeReclaimDelete || len(raw.AllowedTopologies) != 1 {
				t.Errorf("raw-disks StorageClass %+v", raw)
			}
		}},
		{name: "the admission policy names the release's watcher", check: func(t *testing.T) {
			p := &admissionregistrationv1.ValidatingAdmissionPolicy{}
			r.get("ValidatingAdmissionPolicy", prefix+"-watcher-own-node", p)
			b := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{}
			r.get("ValidatingAdmissionPolicyBinding", prefix+"-watcher-own-node", b)
			want := "'system:serviceaccount:storage:" + prefix + "-watcher'"
			if len(p.Spec.MatchConditions) != 1 || !strings.Contains(p.Spec.MatchConditions[0].Expression, want) {
				t.Errorf("match conditions %+v, want %s", p.Spec.MatchConditions, want)
			}
			if b.Spec.PolicyName != p.Name {
				t.Errorf("binding names policy %q", b.Spec.PolicyName)
			}
		}},
		{name: "RBAC binds the release's ServiceAccounts", check: func(t *testing.T) {
			for _, name := range []string{prefix + "-master", prefix + "-watcher"} {
				b := &rbacv1.ClusterRoleBinding{}
				r.get("ClusterRoleBinding", name, b)
				if len(b.Subjects) != 1 || b.Subjects[0].Name != name || b.Subjects[0].Namespace != ns {
					t.Errorf("ClusterRoleBinding %s subjects %+v", name, b.Subjects)
				}
			}
		}},
		{name: "serviceMonitor scrapes master and watchers", check: func(t *testing.T) {
			svc := &corev1.Service{}
			r.get("Service", prefix+"-metrics", svc)
			if _, ok := svc.Spec.Selector["app.kubernetes.io/component"]; ok || svc.Spec.Ports[0].TargetPort.String() != "metrics" {
				t.Errorf("Service %+v", svc.Spec)
			}
			for _, o := range r.objs {
				if o.GetKind() == "ServiceMonitor" && o.GetNamespace() == "monitoring" && o.GetLabels()["release"] == "kube-prometheus" {
					return
				}
			}
			t.Errorf("no ServiceMonitor in monitoring with the additional labels; have %v", r.names())
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, tc.check)
	}
}

// TestKubeConfigEnv: upstream's KUBECONFIG variable becomes --kubeconfig.
func TestKubeConfigEnv(t *testing.T) {
	r := render(t, testRelease, testNS, map[string]any{"kubeConfigEnv": "/etc/kube/config"})
	mc := container(t, r.deployment("local-volume-provisioner-master").Spec.Template.Spec, "master")
	wc := container(t, r.daemonSet("local-volume-provisioner-watcher").Spec.Template.Spec, "watcher")
	for _, args := range [][]string{mc.Args, wc.Args} {
		if !hasArg(args, "--kubeconfig=/etc/kube/config") {
			t.Errorf("args %v lack --kubeconfig", args)
		}
	}
}
