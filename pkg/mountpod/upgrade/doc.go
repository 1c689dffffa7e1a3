// Package upgrade replaces the mount pods of a DaemonSet with
// `updateStrategy: OnDelete` node by node, without ever deleting a mount pod
// while a volume it serves is in use (the "mount utilities in pods" design;
// cmd/mount-utilities-upgrade is its command line).
//
// For each node it checks the DaemonSet and finds the node's mount pod and
// the DaemonSet's current revision; reads the plugins the old pod serves
// from its mount labels (mountpod.ParseLabelKey); taints the node so that
// the pods using those volumes are evicted; waits until no pod, no node
// status entry and no FUSE mount that a process of the old pod serves is
// left; deletes the old pod; waits until the new one is Ready; and removes
// the taint. A pod that tolerates the taint and uses a served volume makes
// it refuse. A run stopped half-way is finished by the next one: the taint's
// value names the old pod.
//
// Everything goes through a kubernetes.Interface and a PodExec, so the
// tests run on client-go's fake clientset. deploy/mount-utilities/README.md
// states the procedure and the exit codes.
package upgrade
