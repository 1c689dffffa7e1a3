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
