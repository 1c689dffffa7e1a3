//go:build tools

// Package tools records the upstream commands that hack/ builds, so that
// go.mod and go.sum pin them together with the library code.
package tools

import (
	_ "go.etcd.io/etcd/server/v3/etcdmain"
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-proxy"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubeadm"
	_ "k8s.io/kubernetes/cmd/kubectl"
	_ "k8s.io/kubernetes/cmd/kubelet"
	// agnhost, for the images of upstream's e2e specs (hack/e2e-upstream.sh).
	_ "k8s.io/kubernetes/test/images/agnhost"
	// ginkgo, which runs those specs in parallel.
	_ "github.com/onsi/ginkgo/v2/ginkgo"
)
