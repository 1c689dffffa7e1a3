// Package flexadapter adapts nodeplug's flexvolume prober
// (pkg/flexvolume/prober) and driver client (pkg/flexvolume/driver) to the
// volume plugin interfaces of upstream's k8s.io/kubernetes/pkg/volume, so
// that the VolumePluginMgr embedded in the kubelet and the
// kube-controller-manager uses them unchanged.
//
// One Source watches one plugin directory. Each consumer (the kubelet's
// VolumePluginMgr, or the attach/detach and SELinux-warning controllers of
// the controller-manager) gets its own view from NewConsumerView: views share
// the watcher and the driver inits, and each creates its own plugin objects
// because VolumePluginMgr initialises every plugin with its own host.
//
// This is a thin adapter: the behaviour lives in the two library packages.
package flexadapter
