// Package mounter is a mount.Interface that runs mount(8) and umount(8)
// of a volume plugin in the plugin's mount pod (pkg/mountpod), and
// everything else on the host. The plugin is read from the target path
// under the kubelet's root dir (see PluginForPath). Bind mounts, remounts
// and memory filesystems never need a utility and stay on the host, as do
// mount table reads.
package mounter
