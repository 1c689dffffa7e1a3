// Package framework is what nodeplug's e2e tests share: a client for the
// cluster hack/local-up-cluster.sh started (KUBECONFIG), paths into that
// cluster's directory (LOCAL_UP_DIR), the cluster's nodes and the commands
// run on them and on the host (Node.Run, Run, AttachLoop), and helpers
// that wait with bounded polls and clean up after the test: Poll, the one
// poll loop; WaitForEvent and RequireEvent, the one Event waiter
// (EventQuery says which Event); WaitForPod, DeletePod, WaitForPVGone,
// CreateDaemonSet and WaitForRollout; and readers of what the cluster
// reports (NodeReady, PodReady, NodeAttached, CSINodeHasDriver,
// KubeletMetrics with MetricSum).
//
// With E2E_CLUSTER=existing (ClusterMode) the cluster is any cluster
// KUBECONFIG names: its nodes are the API's that take pods, reached over
// SSH at their InternalIP with KUBE_SSH_KEY_PATH as KUBE_SSH_USER
// (SSHTarget); Node.Run, Node.Command, Node.Systemctl, the mount readers
// and Node.ReadFile, WriteFile, MkdirAll and RemoveAll work there, and
// what needs the local cluster's host skips the test with
// LocalHostSkipPrefix (Cluster.RequireLocalHost). Image names come from
// E2E_IMAGE_REPO (Image, ManifestImages).
//
// The files that reach a cluster build with the e2e tag only (hack/e2e.sh
// sets it). Poll, the Event matcher, the conditions, the metrics parser,
// the cluster mode, the SSH command line, the node list from Node objects
// and the image names need no cluster: they build without the tag, and
// their unit tests run with hack/test.sh.
package framework
