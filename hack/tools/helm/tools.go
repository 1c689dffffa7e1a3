//go:build tools

// Package tools pins the helm command that the integration tier drives
// against a real kube-apiserver (test/integration/helm) and that make
// release packages the chart with, in a module of its own so that Helm's
// dependency graph stays out of nodeplug's. hack/lib/helm.sh builds the
// command from this directory.
package tools

import (
	_ "helm.sh/helm/v3/cmd/helm"
)
