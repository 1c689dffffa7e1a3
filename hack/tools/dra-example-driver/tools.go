//go:build tools

// Package tools pins kubernetes-sigs/dra-example-driver, the DRA driver
// nobody here wrote that the e2e tier deploys with its own Helm chart
// (TestDRADrivers, test/e2e/dra_example_test.go), in a module of its own
// so that its dependency graph (Kubernetes libraries one minor release
// behind nodeplug's, controller-runtime) stays out of nodeplug's. The
// module proxy serves the release; hack/lib/build.sh builds its three
// commands from this directory, and the e2e test reads the chart from the
// module's source in the module cache (deployments/helm/dra-example-driver).
package tools

import (
	_ "sigs.k8s.io/dra-example-driver/cmd/dra-example-controller"
	_ "sigs.k8s.io/dra-example-driver/cmd/dra-example-kubeletplugin"
	_ "sigs.k8s.io/dra-example-driver/cmd/dra-example-webhook"
)
