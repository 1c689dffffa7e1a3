// Package framework starts the real control plane that nodeplug's
// integration tests run against: an etcd embedded in the test binary
// (go.etcd.io/etcd/server/v3/embed, the version k8s.io/kubernetes pins) and
// upstream's kube-apiserver started in-process through its exported test
// server. Tests in a package share one etcd; each test gets its own
// apiserver and its own etcd key prefix.
package framework
