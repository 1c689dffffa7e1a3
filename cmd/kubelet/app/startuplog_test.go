package app

import (
	"strings"
	"testing"

	utilfeature "k8s.io/apiserver/pkg/util/feature"
	logsapi "k8s.io/component-base/logs/api/v1"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"
	kubeletconfigv1beta1 "k8s.io/kubelet/config/v1beta1"
	"k8s.io/kubernetes/cmd/kubelet/app/options"
	kubeletconfig "k8s.io/kubernetes/pkg/kubelet/apis/config"
	"sigs.k8s.io/yaml"
)

func TestEffectiveConfigYAML(t *testing.T) {
	kc, err := options.NewKubeletConfiguration()
	if err != nil {
		t.Fatal(err)
	}
	kc.StaticPodURL = "https://config.example/pods"
	kc.StaticPodURLHeader = map[string][]string{"Authorization": {"Bearer secret-token", "second"}}
	kc.MaxPods = 42
	out, err := effectiveConfigYAML(kc)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out, "secret-token") {
		t.Errorf("a staticPodURLHeader value is logged:\n%s", out)
	}
	var got kubeletconfigv1beta1.KubeletConfiguration
	if err := yaml.UnmarshalStrict([]byte(out), &got); err != nil {
		t.Fatalf("the logged configuration is not a v1beta1 KubeletConfiguration: %v\n%s", err, out)
	}
	if got.APIVersion != "kubelet.config.k8s.io/v1beta1" || got.Kind != "KubeletConfiguration" {
		t.Errorf("apiVersion %q kind %q, want kubelet.config.k8s.io/v1beta1 KubeletConfiguration", got.APIVersion, got.Kind)
	}
	if got.MaxPods != 42 || got.StaticPodURL != kc.StaticPodURL {
		t.Errorf("maxPods %d staticPodURL %q, want the configuration's 42 and %q", got.MaxPods, got.StaticPodURL, kc.StaticPodURL)
	}
	if h := got.StaticPodURLHeader["Authorization"]; len(h) != 1 || h[0] != maskedHeaderValue {
		t.Errorf("logged Authorization header %q, want [%s]", h, maskedHeaderValue)
	}
	if h := kc.StaticPodURLHeader["Authorization"]; len(h) != 2 || h[0] != "Bearer secret-token" {
		t.Errorf("the configuration itself was changed: Authorization header %q", h)
	}
}

func TestLogEffectiveConfig(t *testing.T) {
	kc, err := options.NewKubeletConfiguration()
	if err != nil {
		t.Fatal(err)
	}
	logger, logs := bufferedLogger(t)
	logEffectiveConfig(logger, kc)
	got := logs()
	// The default verbosity of the test logger is 0: the line is logged
	// at V(0), as upstream does.
	if !strings.Contains(got, "Kubelet configuration in effect") || !strings.Contains(got, "kind: KubeletConfiguration") {
		t.Errorf("no configuration logged at V(0):\n%s", got)
	}
}

func TestWarnKubeletCgroupOutsideReserved(t *testing.T) {
	tests := []struct {
		name                   string
		kubeletCgroups, kubeRe string
		warn                   bool
	}{
		{name: "neither set"},
		{name: "only kubeletCgroups", kubeletCgroups: "/system.slice/kubelet.service"},
		{name: "only kubeReservedCgroup", kubeRe: "/kube.slice"},
		{name: "inside", kubeletCgroups: "/kube.slice/kubelet.service", kubeRe: "/kube.slice"},
		{name: "the same cgroup", kubeletCgroups: "/kube.slice", kubeRe: "/kube.slice"},
		{name: "outside", kubeletCgroups: "/system.slice/kubelet.service", kubeRe: "/kube.slice", warn: true},
		// As upstream: a string prefix, not a path test.
		{name: "string prefix only", kubeletCgroups: "/kubelet", kubeRe: "/kube"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			logger, logs := bufferedLogger(t)
			warnKubeletCgroupOutsideReserved(logger, &kubeletconfig.KubeletConfiguration{
				KubeletCgroups: tc.kubeletCgroups, KubeReservedCgroup: tc.kubeRe,
			})
			got := logs()
			if warned := strings.Contains(got, "Unsupported cgroup layout"); warned != tc.warn {
				t.Errorf("warned %v, want %v; log:\n%s", warned, tc.warn, got)
			}
			if tc.warn && !strings.Contains(got, tc.kubeletCgroups) {
				t.Errorf("the warning does not name kubeletCgroups %q:\n%s", tc.kubeletCgroups, got)
			}
		})
	}
}

// bufferedLogger returns a logger at verbosity 0 and a function that
// returns what it logged.
func bufferedLogger(t *testing.T) (klog.Logger, func() string) {
	t.Helper()
	logger := ktesting.NewLogger(t, ktesting.NewConfig(ktesting.Verbosity(0), ktesting.BufferLogs(true)))
	return logger, func() string {
		return logger.GetSink().(ktesting.Underlier).GetBuffer().String()
	}
}

func TestStartupLogsConfigAndCgroupLayout(t *testing.T) {
	c, err := newCommand()
	if err != nil {
		t.Fatal(err)
	}
	// --fail-cgroupv1=false: validation would otherwise depend on the host.
	args := []string{"--kubelet-cgroups=/system.slice/kubelet.service", "--kube-reserved-cgroup=/kube.slice", "--fail-cgroupv1=false"}
	if err := c.all.Parse(args); err != nil {
		t.Fatal(err)
	}
	// complete applies the logging configuration, which may be done once
	// per process unless reset.
	t.Cleanup(func() {
		if err := logsapi.ResetForTest(utilfeature.DefaultFeatureGate); err != nil {
			t.Errorf("resetting the logging configuration: %v", err)
		}
	})
	logger, logs := bufferedLogger(t)
	if _, _, err := c.complete(klog.NewContext(t.Context(), logger), args); err != nil {
		t.Fatalf("complete: %v", err)
	}
	got := logs()
	for _, want := range []string{"Kubelet configuration in effect", "kubeletCgroups: /system.slice/kubelet.service", "Unsupported cgroup layout"} {
		if !strings.Contains(got, want) {
			t.Errorf("start-up log has no %q:\n%s", want, got)
		}
	}
}
