// Package localpv holds the integration tests of the local volume
// provisioner: the master (pkg/localpv/controller) against a real
// kube-apiserver, with a simulator standing in for the Job controller and
// the kubelet, and the watcher's ValidatingAdmissionPolicy with real
// node-bound ServiceAccount tokens. The shipped manifests and CRD are
// applied as they are.
package localpv
