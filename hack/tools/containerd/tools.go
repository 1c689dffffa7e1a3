//go:build tools

// Package tools pins containerd, the local cluster's container runtime, in
// a module of its own so that its dependency graph stays out of
// nodeplug's. Kubernetes v1.35 was the last release to support containerd
// 1.x, and Debian 12 ships 1.6, which also has no CDI (a DRA driver's
// devices reach containers through CDI specs). hack/lib/build.sh builds containerd, its
// runc shim and ctr from this directory; local-up runs them with Debian's
// runc.
package tools

import (
	_ "github.com/containerd/containerd/v2/cmd/containerd"
	_ "github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2"
	_ "github.com/containerd/containerd/v2/cmd/ctr"
)
