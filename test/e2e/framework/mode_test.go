package framework

import (
	"context"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

func TestModeParse(t *testing.T) {
	tests := map[string]struct {
		in      string
		want    ClusterMode
		wantErr bool
	}{
		"unset is the local cluster": {in: "", want: ModeLocal},
		"local":                      {in: "local", want: ModeLocal},
		"existing":                   {in: "existing", want: ModeExisting},
		"spaces around it":           {in: " existing\n", want: ModeExisting},
		"another word":               {in: "kind", wantErr: true},
		"case matters":               {in: "Existing", wantErr: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := ParseClusterMode(tc.in)
			if (err != nil) != tc.wantErr || got != tc.want {
				t.Fatalf("ParseClusterMode(%q) = %q, %v; want %q, error %v", tc.in, got, err, tc.want, tc.wantErr)
			}
			if err != nil && !strings.Contains(err.Error(), ClusterModeEnv) {
				t.Errorf("error %q does not name %s", err, ClusterModeEnv)
			}
		})
	}
}

func TestModeFromEnvInvalidIsExisting(t *testing.T) {
	tests := map[string]struct {
		env  string
		want ClusterMode
	}{
		"unset":   {env: "", want: ModeLocal},
		"local":   {env: "local", want: ModeLocal},
		"invalid": {env: "remote", want: ModeExisting},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Setenv(ClusterModeEnv, tc.env)
			if got := clusterModeFromEnv(); got != tc.want {
				t.Fatalf("clusterModeFromEnv() with %q = %q, want %q", tc.env, got, tc.want)
			}
		})
	}
}

func TestSSHArgv(t *testing.T) {
	base := SSHTarget{Host: "10.0.0.7", User: "root", KeyPath: "/keys/id", KnownHosts: "/tmp/x/known_hosts"}
	opts := []string{"ssh", "-i", "/keys/id", "-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=accept-new",
		"-o", "UserKnownHostsFile=/tmp/x/known_hosts", "-o", "ConnectTimeout=10", "-o", "LogLevel=ERROR"}
	tests := map[string]struct {
		target SSHTarget
		name   string
		args   []string
		want   []string // after opts
	}{
		"root, plain words": {target: base, name: "cat", args: []string{"/proc/self/mountinfo"},
			want: []string{"-p", "22", "-l", "root", "--", "10.0.0.7", "cat /proc/self/mountinfo"}},
		"another user goes through sudo": {target: with(base, func(s *SSHTarget) { s.User = "ops" }), name: "systemctl", args: []string{"restart", "kubelet"},
			want: []string{"-p", "22", "-l", "ops", "--", "10.0.0.7", "sudo -n -- systemctl restart kubelet"}},
		"a port of its own": {target: with(base, func(s *SSHTarget) { s.Port = 2222 }), name: "true",
			want: []string{"-p", "2222", "-l", "root", "--", "10.0.0.7", "true"}},
		"arguments quoted for the remote shell": {target: base, name: "sh", args: []string{"-c", "echo 'a b' > $F", ""},
			want: []string{"-p", "22", "-l", "root", "--", "10.0.0.7", `sh -c 'echo '\''a b'\'' > $F' ''`}},
		"an IPv6 address": {target: with(base, func(s *SSHTarget) { s.Host = "fd00::7" }), name: "hostname",
			want: []string{"-p", "22", "-l", "root", "--", "fd00::7", "hostname"}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := tc.target.Argv(tc.name, tc.args...)
			if want := append(slices.Clone(opts), tc.want...); !slices.Equal(got, want) {
				t.Fatalf("Argv =\n%q\nwant\n%q", got, want)
			}
		})
	}
}

func with(s SSHTarget, f func(*SSHTarget)) SSHTarget { f(&s); return s }

func TestSSHShellQuote(t *testing.T) {
	tests := map[string]struct{ in, want string }{
		"plain path":        {in: "/var/lib/kubelet", want: "/var/lib/kubelet"},
		"flag with equals":  {in: "--property=ActiveState", want: "--property=ActiveState"},
		"empty":             {in: "", want: "''"},
		"space":             {in: "a b", want: "'a b'"},
		"single quote":      {in: "it's", want: `'it'\''s'`},
		"glob and variable": {in: "*.sock $HOME", want: "'*.sock $HOME'"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := ShellQuote(tc.in); got != tc.want {
				t.Fatalf("ShellQuote(%q) = %s, want %s", tc.in, got, tc.want)
			}
		})
	}
}

func TestModeNodeAddresses(t *testing.T) {
	node := func(name string, mod func(*corev1.Node)) *corev1.Node {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: corev1.NodeStatus{Addresses: []corev1.NodeAddress{
			{Type: corev1.NodeHostName, Address: name},
			{Type: corev1.NodeInternalIP, Address: "10.0.0." + name[len(name)-1:]},
		}}}
		if mod != nil {
			mod(n)
		}
		return n
	}
	controlPlane := func(n *corev1.Node) {
		n.Spec.Taints = []corev1.Taint{{Key: "node-role.kubernetes.io/control-plane", Effect: corev1.TaintEffectNoSchedule}}
	}
	tests := map[string]struct {
		nodes   []*corev1.Node
		want    []NodeAddress
		wantErr string
	}{
		"ordered by name": {nodes: []*corev1.Node{node("w2", nil), node("w1", nil)},
			want: []NodeAddress{{"w1", "10.0.0.1"}, {"w2", "10.0.0.2"}}},
		"a tainted control plane is left out": {nodes: []*corev1.Node{node("cp1", controlPlane), node("w2", nil)},
			want: []NodeAddress{{"w2", "10.0.0.2"}}},
		"a PreferNoSchedule taint keeps the node": {nodes: []*corev1.Node{node("w3", func(n *corev1.Node) {
			n.Spec.Taints = []corev1.Taint{{Key: "k", Effect: corev1.TaintEffectPreferNoSchedule}}
		})}, want: []NodeAddress{{"w3", "10.0.0.3"}}},
		"a cordoned node is left out": {nodes: []*corev1.Node{node("w1", func(n *corev1.Node) { n.Spec.Unschedulable = true }), node("w2", nil)},
			want: []NodeAddress{{"w2", "10.0.0.2"}}},
		"the first InternalIP": {nodes: []*corev1.Node{node("w4", func(n *corev1.Node) {
			n.Status.Addresses = append(n.Status.Addresses, corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: "fd00::4"})
		})}, want: []NodeAddress{{"w4", "10.0.0.4"}}},
		"no InternalIP": {nodes: []*corev1.Node{node("w5", func(n *corev1.Node) {
			n.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeExternalIP, Address: "192.0.2.5"}}
		})}, wantErr: "node w5 has no InternalIP"},
		"only a control plane": {nodes: []*corev1.Node{node("cp1", controlPlane)}, wantErr: "none of the cluster's 1 node(s)"},
		"no nodes":             {wantErr: "none of the cluster's 0 node(s)"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			client := fake.NewClientset()
			for _, n := range tc.nodes {
				if _, err := client.CoreV1().Nodes().Create(context.Background(), n, metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			got, err := ListNodeAddresses(context.Background(), client)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want one with %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || !slices.Equal(got, tc.want) {
				t.Fatalf("ListNodeAddresses = %v, %v; want %v", got, err, tc.want)
			}
		})
	}
}

func TestImageRepo(t *testing.T) {
	tests := map[string]struct{ repo, name, want string }{
		"default":               {repo: "", name: "busybox:1", want: "docker.io/nodeplug/busybox:1"},
		"a registry of its own": {repo: "registry.example:5000/np", name: "busybox:1", want: "registry.example:5000/np/busybox:1"},
		"trailing slash":        {repo: "registry.example/np/", name: "mount-utilities:2", want: "registry.example/np/mount-utilities:2"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := imageRef(tc.repo, tc.name); got != tc.want {
				t.Fatalf("imageRef(%q, %q) = %q, want %q", tc.repo, tc.name, got, tc.want)
			}
			t.Setenv(ImageRepoEnv, tc.repo)
			if got := Image(tc.name); got != tc.want {
				t.Fatalf("Image(%q) with %s=%q = %q, want %q", tc.name, ImageRepoEnv, tc.repo, got, tc.want)
			}
		})
	}
}

func TestImagePullPolicy(t *testing.T) {
	tests := map[string]struct {
		mode ClusterMode
		want corev1.PullPolicy
	}{
		"local: imported, never pulled": {mode: ModeLocal, want: corev1.PullNever},
		"existing: pulled":              {mode: ModeExisting, want: corev1.PullIfNotPresent},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := pullPolicy(tc.mode); got != tc.want {
				t.Fatalf("pullPolicy(%q) = %q, want %q", tc.mode, got, tc.want)
			}
		})
	}
}

func TestImageManifestRewrite(t *testing.T) {
	const manifest = `spec:
  containers:
  - name: a
    image: docker.io/nodeplug/mount-utilities:1
  - image: "nodeplug/local-volume-provisioner:dev"
    name: b
  - name: c
    image: registry.k8s.io/pause:3.10
  - name: d
    image: docker.io/nodeplugfoo/x:1
    env:
    - name: JOB_IMAGE
      value: nodeplug/local-volume-provisioner:dev
    - name: NOTE
      value: runs nodeplug/ images
`
	tests := map[string]struct {
		repo string
		want []string // lines that must be in the output
		not  []string // and that must not
	}{
		"default repository: unchanged": {repo: "", want: []string{"image: docker.io/nodeplug/mount-utilities:1", `image: "nodeplug/local-volume-provisioner:dev"`}},
		"the default named: unchanged":  {repo: "docker.io/nodeplug", want: []string{"image: docker.io/nodeplug/mount-utilities:1"}},
		"a registry of its own": {repo: "reg.example:5000/np/",
			want: []string{"image: reg.example:5000/np/mount-utilities:1", `image: "reg.example:5000/np/local-volume-provisioner:dev"`,
				"image: registry.k8s.io/pause:3.10", "image: docker.io/nodeplugfoo/x:1",
				"value: reg.example:5000/np/local-volume-provisioner:dev", "value: runs nodeplug/ images"},
			not: []string{"image: docker.io/nodeplug/", `image: "nodeplug/`}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := string(rewriteImages([]byte(manifest), tc.repo))
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("output lacks %q:\n%s", w, got)
				}
			}
			for _, w := range tc.not {
				if strings.Contains(got, w) {
					t.Errorf("output still has %q:\n%s", w, got)
				}
			}
		})
	}
}

func TestSSHCommName(t *testing.T) {
	tests := map[string]struct{ in, want string }{
		"short":                {in: "kubelet", want: "kubelet"},
		"fifteen bytes":        {in: "kube-controller", want: "kube-controller"},
		"cut to fifteen bytes": {in: "kube-controller-manager", want: "kube-controller"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := commName(tc.in); got != tc.want {
				t.Fatalf("commName(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}
