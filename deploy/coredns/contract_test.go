package coredns

import (
	"net/netip"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// TestServiceIsClusterDNS: kube-dns is at the address the kubelets give
// pods as their nameserver, inside the apiserver's service range, and
// serves DNS over UDP and TCP and the metrics, each on a port the pods name.
func TestServiceIsClusterDNS(t *testing.T) {
	o := render(t)
	svc, dep := o.services[0], o.deployments[0]
	if svc.Name != "kube-dns" || svc.Namespace != namespace || svc.Labels[label] != labelValue {
		t.Errorf("Service %s/%s labels %v, want kube-system/kube-dns with %s=%s", svc.Namespace, svc.Name, svc.Labels, label, labelValue)
	}
	clusterDNS := shellValue(t, nodeConfig, `clusterDNS: \[([0-9.]+)\]`)
	if svc.Spec.ClusterIP != clusterDNS {
		t.Errorf("clusterIP %s, want the kubelets' clusterDNS %s (%s)", svc.Spec.ClusterIP, clusterDNS, nodeConfig)
	}
	serviceRange := netip.MustParsePrefix(shellValue(t, clusterSh, `--service-cluster-ip-range (\S+)`))
	if ip, err := netip.ParseAddr(svc.Spec.ClusterIP); err != nil || !serviceRange.Contains(ip) {
		t.Errorf("clusterIP %s is not in the service range %s (%s)", svc.Spec.ClusterIP, serviceRange, clusterSh)
	}
	if !slices.Equal(sortedPairs(svc.Spec.Selector), sortedPairs(map[string]string{label: labelValue})) ||
		dep.Spec.Template.Labels[label] != labelValue {
		t.Errorf("Service selects %v, pods are labelled %v; want both %s=%s", svc.Spec.Selector, dep.Spec.Template.Labels, label, labelValue)
	}

	want := []string{"53/UDP->dns", "53/TCP->dns-tcp", "9153/TCP->metrics"}
	var got []string
	ctr := dep.Spec.Template.Spec.Containers[0]
	for _, p := range svc.Spec.Ports {
		got = append(got, portString(p.Port, p.Protocol)+"->"+p.TargetPort.String())
		if p.TargetPort.Type != intstr.String || !slices.ContainsFunc(ctr.Ports, func(cp v1.ContainerPort) bool {
			return cp.Name == p.TargetPort.StrVal && cp.Protocol == p.Protocol && cp.ContainerPort == p.Port
		}) {
			t.Errorf("Service port %s: the container has no %s port of that name and number", p.Name, p.Protocol)
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("Service ports %v, want %v", got, want)
	}
}

// TestDeploymentRunsTheImage: the pods run the image build/coredns makes,
// as its non-root user, with the one capability its binary carries, on
// the Corefile of this directory.
func TestDeploymentRunsTheImage(t *testing.T) {
	o := render(t)
	dep, cm := o.deployments[0], o.configMaps[0]
	spec := dep.Spec.Template.Spec
	if len(spec.Containers) != 1 {
		t.Fatalf("%d containers, want 1", len(spec.Containers))
	}
	ctr := spec.Containers[0]
	uid, _, _ := strings.Cut(imageArg(t, "-user"), ":")
	checks := []struct {
		name      string
		got, want any
	}{
		{"namespace", dep.Namespace, namespace},
		{"replicas", *dep.Spec.Replicas, int32(2)},
		{"image (build/coredns/image.args -name)", ctr.Image, imageArg(t, "-name")},
		// The release on a require line of its own, as np::pinned_version reads it.
		{"image tag (hack/tools/coredns pins)", ctr.Image, "docker.io/nodeplug/coredns:" +
			shellValue(t, corednsGoMod, `(?m)^require github\.com/coredns/coredns (v\S+)$`)},
		{"imagePullPolicy", ctr.ImagePullPolicy, v1.PullIfNotPresent},
		{"priorityClassName", spec.PriorityClassName, "system-cluster-critical"},
		{"serviceAccountName", spec.ServiceAccountName, o.serviceAccounts[0].Name},
		{"dnsPolicy (the node's resolver, not itself)", spec.DNSPolicy, v1.DNSDefault},
		{"args", strings.Join(ctr.Args, " "), "-conf /etc/coredns/Corefile"},
		{"runAsNonRoot", spec.SecurityContext.RunAsNonRoot != nil && *spec.SecurityContext.RunAsNonRoot, true},
		{"runAsUser (the image's -user)", spec.SecurityContext.RunAsUser != nil && uid == itoa(*spec.SecurityContext.RunAsUser), true},
		{"allowPrivilegeEscalation", *ctr.SecurityContext.AllowPrivilegeEscalation, false},
		{"capabilities added", ctr.SecurityContext.Capabilities.Add, []v1.Capability{"NET_BIND_SERVICE"}},
		{"capabilities dropped", ctr.SecurityContext.Capabilities.Drop, []v1.Capability{"ALL"}},
		{"the binary's file capability (image.args -cap)", imageArg(t, "-cap"), "/coredns=net_bind_service"},
		{"ConfigMap", cm.Namespace + "/" + cm.Name, namespace + "/coredns"},
	}
	for _, c := range checks {
		if !equal(c.got, c.want) {
			t.Errorf("%s: %v, want %v", c.name, c.got, c.want)
		}
	}
	corefile, err := os.ReadFile("Corefile")
	if err != nil {
		t.Fatal(err)
	}
	if cm.Data["Corefile"] != string(corefile) {
		t.Errorf("ConfigMap coredns does not hold the Corefile of this directory")
	}
	vol := slices.IndexFunc(spec.Volumes, func(v v1.Volume) bool { return v.ConfigMap != nil && v.ConfigMap.Name == cm.Name })
	mount := slices.IndexFunc(ctr.VolumeMounts, func(m v1.VolumeMount) bool {
		return vol >= 0 && m.Name == spec.Volumes[vol].Name && m.MountPath == "/etc/coredns"
	})
	if vol < 0 || mount < 0 {
		t.Errorf("the ConfigMap is not mounted at /etc/coredns")
	}
}

// TestProbesMatchCorefile: liveness asks the health plugin and readiness
// the ready plugin, on the ports the Corefile gives them (their defaults
// when it gives none).
func TestProbesMatchCorefile(t *testing.T) {
	ctr := render(t).deployments[0].Spec.Template.Spec.Containers[0]
	_, dirs := corefileDirectives(t, readCorefile(t))
	tests := []struct {
		name        string
		probe       *v1.Probe
		directive   string
		path        string
		defaultPort int32
	}{
		{name: "liveness is the health plugin", probe: ctr.LivenessProbe, directive: "health", path: "/health", defaultPort: 8080},
		{name: "readiness is the ready plugin", probe: ctr.ReadinessProbe, directive: "ready", path: "/ready", defaultPort: 8181},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := directive(dirs, tc.directive)
			if d == nil {
				t.Fatalf("the Corefile has no %s", tc.directive)
			}
			port := tc.defaultPort
			if len(d) > 1 && d[1] != "{" {
				port = atoi(t, d[1][strings.LastIndex(d[1], ":")+1:])
			}
			if tc.probe == nil || tc.probe.HTTPGet == nil {
				t.Fatalf("no HTTP probe")
			}
			if g := tc.probe.HTTPGet; g.Path != tc.path || g.Port.IntValue() != int(port) {
				t.Errorf("probe GET %s on %s, want %s on %d", g.Path, g.Port.String(), tc.path, port)
			}
		})
	}
}

// TestCorefileServesTheClusterDomain: the Corefile answers for the
// kubelets' clusterDomain and the reverse zones, forwards the rest to the
// node's resolver, and has the plugins kubeadm's Corefile has.
func TestCorefileServesTheClusterDomain(t *testing.T) {
	keys, dirs := corefileDirectives(t, readCorefile(t))
	if !slices.Equal(keys, []string{".:53"}) {
		t.Errorf("server blocks %v, want .:53", keys)
	}
	domain := shellValue(t, nodeConfig, `clusterDomain: (\S+)`)
	tests := []struct {
		name      string
		directive string
		want      []string
	}{
		{name: "kubernetes answers for the cluster domain and reverse zones", directive: "kubernetes", want: []string{"kubernetes", domain, "in-addr.arpa", "ip6.arpa", "{"}},
		{name: "forward sends the rest to the node's resolver", directive: "forward", want: []string{"forward", ".", "/etc/resolv.conf", "{"}},
		{name: "cache 30", directive: "cache", want: []string{"cache", "30"}},
		{name: "prometheus on the metrics port", directive: "prometheus", want: []string{"prometheus", ":9153"}},
		{name: "errors", directive: "errors", want: []string{"errors"}},
		{name: "loop", directive: "loop", want: []string{"loop"}},
		{name: "reload", directive: "reload", want: []string{"reload"}},
		{name: "loadbalance", directive: "loadbalance", want: []string{"loadbalance"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := directive(dirs, tc.directive); !slices.Equal(got, tc.want) {
				t.Errorf("%q, want %q", got, tc.want)
			}
		})
	}
}

// TestRBACCoversKubernetesPlugin: the ClusterRole grants exactly what the
// kubernetes plugin lists and watches with this Corefile, to the service
// account the pods run as.
func TestRBACCoversKubernetesPlugin(t *testing.T) {
	o := render(t)
	role, b, sa := o.clusterRoles[0], o.bindings[0], o.serviceAccounts[0]
	want := []string{
		"/namespaces/list", "/namespaces/watch", "/services/list", "/services/watch",
		"discovery.k8s.io/endpointslices/list", "discovery.k8s.io/endpointslices/watch",
	}
	// "pods verified" keeps a watch on every pod; "pods insecure" none.
	if regexp.MustCompile(`(?m)^\s*pods\s+verified\b`).MatchString(readCorefile(t)) {
		want = append(want, "/pods/list", "/pods/watch")
	}
	slices.Sort(want)
	var got []string
	for _, r := range role.Rules {
		for _, g := range r.APIGroups {
			for _, res := range r.Resources {
				for _, v := range r.Verbs {
					got = append(got, g+"/"+res+"/"+v)
				}
			}
		}
	}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("ClusterRole %s grants %v, want exactly %v", role.Name, got, want)
	}
	if b.RoleRef != (rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name}) {
		t.Errorf("ClusterRoleBinding %s refers to %+v, want ClusterRole %s", b.Name, b.RoleRef, role.Name)
	}
	wantSubjects := []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: sa.Name, Namespace: namespace}}
	if sa.Namespace != namespace || !slices.Equal(b.Subjects, wantSubjects) {
		t.Errorf("ClusterRoleBinding binds %+v, ServiceAccount %s/%s; want %+v", b.Subjects, sa.Namespace, sa.Name, wantSubjects)
	}
}
