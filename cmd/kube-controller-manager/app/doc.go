// Package app wires nodeplug's kube-controller-manager. Flags, config and
// every controller come from upstream's k8s.io/kubernetes/cmd/kube-controller-manager/app.
// With no nodeplug flag set, upstream's Run is called unchanged. With one
// set, Run in this package replaces upstream's Run (which takes no hooks,
// and whose ControllerDescriptor cannot be built outside its package): it
// builds the upstream controllers through CreateControllerContext,
// BuildControllers and RunControllers, and builds the attach/detach and
// SELinux-warning controllers itself so that VolumeHooks can give them
// nodeplug's volume plugin prober. The designs, and that Run with them,
// are compiled in unless their nodeplug_no_* build tags are given
// (designs.go).
package app
