// Package app wires nodeplug's kubelet: upstream's flag and config handling
// (k8s.io/kubernetes/cmd/kubelet/app/options), upstream's dependencies and
// Run, and between them CustomizeDependencies, where nodeplug's
// --experimental-* features replace parts of kubelet.Dependencies.
package app
