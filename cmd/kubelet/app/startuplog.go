package app

import (
	"fmt"
	"strings"

	"k8s.io/klog/v2"
	kubeletconfigv1beta1 "k8s.io/kubelet/config/v1beta1"
	kubeletconfig "k8s.io/kubernetes/pkg/kubelet/apis/config"
	kubeletscheme "k8s.io/kubernetes/pkg/kubelet/apis/config/scheme"
	"sigs.k8s.io/yaml"
)

// maskedHeaderValue replaces every staticPodURLHeader value in the logged
// configuration: those headers may carry credentials.
const maskedHeaderValue = "<masked>"

// logEffectiveConfig logs, at the default verbosity, the configuration the
// kubelet runs with once flags, --config and --config-dir are merged, as
// upstream's kubelet command does at start. The form is the one /configz
// serves (kubelet.config.k8s.io/v1beta1), as YAML, with staticPodURLHeader
// values masked (one value per header). A configuration that cannot be rendered is logged as an
// error and start-up goes on.
func logEffectiveConfig(logger klog.Logger, kc *kubeletconfig.KubeletConfiguration) {
	out, err := effectiveConfigYAML(kc)
	if err != nil {
		logger.Error(err, "Could not render the kubelet configuration in effect for the log")
		return
	}
	logger.Info("Kubelet configuration in effect", "config", out)
}

// effectiveConfigYAML renders kc as a kubelet.config.k8s.io/v1beta1
// KubeletConfiguration in YAML, with staticPodURLHeader values masked. kc is
// not modified.
func effectiveConfigYAML(kc *kubeletconfig.KubeletConfiguration) (string, error) {
	logged := kc.DeepCopy()
	for name := range logged.StaticPodURLHeader {
		logged.StaticPodURLHeader[name] = []string{maskedHeaderValue}
	}
	scheme, _, err := kubeletscheme.NewSchemeAndCodecs()
	if err != nil {
		return "", err
	}
	external := &kubeletconfigv1beta1.KubeletConfiguration{}
	if err := scheme.Convert(logged, external, nil); err != nil {
		return "", fmt.Errorf("converting to %s: %w", kubeletconfigv1beta1.SchemeGroupVersion, err)
	}
	external.SetGroupVersionKind(kubeletconfigv1beta1.SchemeGroupVersion.WithKind("KubeletConfiguration"))
	out, err := yaml.Marshal(external)
	if err != nil {
		return "", err
	}
	return string(out), nil
}

// warnKubeletCgroupOutsideReserved logs, as upstream's kubelet command does
// at start, that a layout in which kubeletCgroups does not lie within
// kubeReservedCgroup is not supported. Like upstream, "within" is a plain
// string prefix test, and nothing is logged unless both are set.
func warnKubeletCgroupOutsideReserved(logger klog.Logger, kc *kubeletconfig.KubeletConfiguration) {
	if kc.KubeletCgroups == "" || kc.KubeReservedCgroup == "" || strings.HasPrefix(kc.KubeletCgroups, kc.KubeReservedCgroup) {
		return
	}
	logger.Info("Unsupported cgroup layout: kubeletCgroups should be inside kubeReservedCgroup",
		"kubeletCgroups", kc.KubeletCgroups, "kubeReservedCgroup", kc.KubeReservedCgroup)
}
