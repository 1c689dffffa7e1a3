//go:build e2e

// Package framework is what nodeplug's e2e tests share: a client for the
// cluster hack/local-up-cluster.sh started (KUBECONFIG), paths into that
// cluster's directory (LOCAL_UP_DIR), and pod helpers that wait with
// bounded polls and clean up after the test.
package framework
