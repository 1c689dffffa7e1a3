// Package framework is what nodeplug's e2e tests share: a client for the
// cluster hack/local-up-cluster.sh started (KUBECONFIG), paths into that
// cluster's directory (LOCAL_UP_DIR), the cluster's nodes and the commands
// run on them, and helpers that wait with bounded polls (Poll, WaitForEvent,
// WaitForPod) and clean up after the test.
//
// The files that reach a cluster build with the e2e tag only (hack/e2e.sh
// sets it). Poll and the Event matcher need no cluster: they build without
// it, and their unit tests run with hack/test.sh.
package framework
