//go:build tools

// Package tools pins cri-tools, whose crictl a kubeadm or kind node carries,
// in a module of its own so that its dependency graph stays out of
// nodeplug's. Upstream's e2e specs run crictl on a node (through a
// host-exec pod or SSH), for example the subPath spec that stops a
// container with `crictl stop` to make the kubelet restart it.
// hack/lib/build.sh builds crictl from this directory; every local-up node
// gets it in its PATH, pointed at that node's containerd.
package tools

import (
	_ "sigs.k8s.io/cri-tools/cmd/crictl"
)
