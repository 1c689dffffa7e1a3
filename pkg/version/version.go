package version

import (
	"fmt"

	upstream "k8s.io/component-base/version"
)

// gitVersion is set with -ldflags "-X github.com/nodeplug/nodeplug/pkg/version.gitVersion=...".
var gitVersion = "v0.0.0-dev"

// Get returns nodeplug's version.
func Get() string { return gitVersion }

// String formats the upstream Kubernetes version the binary embeds and
// nodeplug's own version, one per line, for --version.
func String() string {
	return fmt.Sprintf("Kubernetes %s\nnodeplug %s", upstream.Get().GitVersion, gitVersion)
}

// Upstream is the line upstream's binaries print for --version
// ("Kubernetes v1.37.2"), which kubeadm's preflight parses from the
// kubelet's standard output and accepts only alone.
func Upstream() string {
	return "Kubernetes " + upstream.Get().GitVersion
}

// Nodeplug is nodeplug's own version line, "nodeplug v0.1.0-...".
func Nodeplug() string {
	return "nodeplug " + gitVersion
}
