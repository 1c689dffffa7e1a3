// Package podexec is VolumeExec: a k8s.io/utils/exec.Interface that runs a
// volume plugin's utilities (mount, mkfs, fsck, blkid, flexvolume drivers)
// either on the host or in the plugin's mount pod (pkg/mountpod), as the
// "mount utilities in pods" design asks.
//
// A Router decides per call: the pod that serves the plugin when one is
// Running and Ready on the node, else the host when the host has the
// utility, else an error that names the label the missing pod should carry.
// Commands in pods run through a PodExecutor: the CRI's ExecSync in the
// kubelet (no API server round trip), or the API's pods/exec in the
// controller-manager. What the CRI cannot do (stdin, environment, working
// directory, streaming) fails with ErrUnsupported instead of being dropped.
package podexec
