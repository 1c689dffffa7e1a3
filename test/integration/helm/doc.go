// Package helm holds the integration tests of the Helm charts with the
// real helm command (pinned by hack/tools/helm, built by
// hack/test-integration.sh, named by NODEPLUG_HELM) against a real
// kube-apiserver and etcd. deploy/helm/local-volume-provisioner: install,
// upgrade with the values of sig-storage-local-static-provisioner's chart,
// a refused upgrade, and an uninstall that leaves no object behind.
// deploy/helm/mount-utilities: install, an upgrade that moves the kubelet's
// directory, a refused upgrade, and an uninstall that leaves nothing.
package helm
