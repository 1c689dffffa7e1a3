// Package podexec is VolumeExec: a k8s.io/utils/exec.Interface that runs a
// volume plugin's utilities (mount, mkfs, fsck, blkid, flexvolume drivers)
// either on the host or in the plugin's mount pod (pkg/mountpod), as the
// "mount utilities in pods" design asks.
//
// A Router decides once per operation (Resolve, one lookup of the pod
// cache): the pod that serves the plugin when one is Running and Ready on
// the node, else the host when the host has the executable, else an error
// that names the label the missing pod should carry; before the cache has
// synced, an error, but for flexvolume drivers installed on the host. Every
// command of the operation runs on the Route it returns, which never looks
// again: a pod gone meanwhile fails the command instead of moving it.
// Commands in pods run through a PodExecutor: the CRI's ExecSync in the
// kubelet (no API server round trip), or the API's pods/exec in the
// controller-manager. What the CRI cannot do (stdin, environment, working
// directory, streaming) fails with ErrUnsupported instead of being dropped.
package podexec
