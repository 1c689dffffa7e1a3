// Package watcher is the per-node DaemonSet component. It keeps a view of the
// node's discovery directories (entry names, kinds and mount state, never
// sizes) and tells the master when the view changes, by writing the node's
// NodeDiskState object. It holds no PersistentVolume permissions.
//
// It is split like the kubelet's plugin watcher:
//
//   - sources (inotify on each class directory, through pkg/util/dirwatch;
//     POLLPRI on /proc/self/mountinfo; a slow resync ticker) only signal
//     "look again";
//   - the view is recomputed from the file system (desired state) and
//     compared with the last view the master was told about (actual state);
//   - the notifier writes the change, retrying with backoff.
package watcher
