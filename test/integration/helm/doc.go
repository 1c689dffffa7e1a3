// Package helm holds the integration test of the Helm chart
// deploy/helm/local-volume-provisioner with the real helm command (pinned
// by hack/tools/helm, built by hack/test-integration.sh, named by
// NODEPLUG_HELM) against a real kube-apiserver and etcd: install, upgrade
// with the values of sig-storage-local-static-provisioner's chart, a
// refused upgrade, and an uninstall that leaves no object behind.
package helm
