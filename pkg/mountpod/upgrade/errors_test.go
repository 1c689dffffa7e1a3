package upgrade

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
)

func withDaemonSet(mutate func(ds *appsv1.DaemonSet)) func(w *world) {
	return func(w *world) {
		ds := daemonSet(appsv1.OnDeleteDaemonSetStrategyType, tolerateAll)
		mutate(ds)
		w.update(ds, testNS)
	}
}

// TestUpgradePreconditions: what stops a run before it changes anything
// (exit 2), and the bounded wait for the DaemonSet controller.
func TestUpgradePreconditions(t *testing.T) {
	kept := func(t *testing.T, w *world) { untainted(t, w); oldPodKept(t, w) }
	runCases(t, []upgradeCase{
		{
			name:  "precondition: updateStrategy RollingUpdate",
			setup: withDaemonSet(func(ds *appsv1.DaemonSet) { ds.Spec.UpdateStrategy.Type = appsv1.RollingUpdateDaemonSetStrategyType }),
			runs:  []run{{code: ExitUsage, out: []string{"has updateStrategy RollingUpdate, not OnDelete"}, after: kept}},
		},
		{
			name: "precondition: the template does not tolerate the taint",
			setup: withDaemonSet(func(ds *appsv1.DaemonSet) {
				ds.Spec.Template.Spec.Tolerations = []v1.Toleration{{Key: "node.kubernetes.io/not-ready", Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute}}
			}),
			runs: []run{{code: ExitUsage, out: []string{"the template of kube-mount/mount-utilities does not tolerate the taint nodeplug.io/mount-utilities-upgrade:NoExecute"}, after: kept}},
		},
		{
			name: "precondition: the old pod tolerates the taint only for a while",
			setup: func(w *world) {
				p := w.pod(testNS, oldName)
				p.Spec.Tolerations = tolerateSome
				w.update(p, testNS)
			},
			runs: []run{{code: ExitUsage, out: []string{"the pod of kube-mount/mount-utilities does not tolerate the taint"}, after: kept}},
		},
		{
			name: "precondition: no such DaemonSet",
			runs: []run{{cfg: func(c *Config) { c.DaemonSet = "other" }, code: ExitUsage, out: []string{`daemonsets.apps "other" not found`}}},
		},
		{
			name: "precondition: no such node",
			runs: []run{{nodes: []string{"node-b"}, code: ExitUsage, out: []string{`nodes "node-b" not found`}}},
		},
		{
			name:  "precondition: no pod of the DaemonSet on the node",
			setup: func(w *world) { w.remove("pods", testNS, oldName) },
			runs:  []run{{code: ExitUsage, out: []string{"no pod of kube-mount/mount-utilities on the node"}}},
		},
		{
			name: "precondition: no ControllerRevision of the DaemonSet yet",
			setup: func(w *world) {
				for _, r := range []string{"mount-utilities-oldhash", "mount-utilities-newhash"} {
					if err := w.client.Tracker().Delete(appsv1.SchemeGroupVersion.WithResource("controllerrevisions"), testNS, r); err != nil {
						t.Fatal(err)
					}
				}
			},
			runs: []run{{code: ExitUsage, out: []string{"has no ControllerRevision yet"}}},
		},
		{
			name:  "the DaemonSet controller never sees the latest generation: exit 4 after the timeout",
			setup: withDaemonSet(func(ds *appsv1.DaemonSet) { ds.Status.ObservedGeneration = 1 }),
			runs: []run{{cfg: timeout(1), code: ExitTimeout,
				out: []string{"the DaemonSet controller has not seen generation 2 of kube-mount/mount-utilities within 1.0 s"}}},
		},
	})
}

// TestUpgradeAPIErrors: a failed API call ends the run with exit 1 (or is
// retried where a wait can), and a pod that never goes or never gets
// Ready times out.
func TestUpgradeAPIErrors(t *testing.T) {
	runCases(t, []upgradeCase{
		{
			name:  "API error reading the DaemonSet: exit 1",
			setup: func(w *world) { w.failures["get daemonsets"] = -1 },
			runs:  []run{{code: ExitFailed, out: []string{"[node-a] error: Internal error occurred: etcd is down"}}},
		},
		{
			name:  "API error listing the mount pods: exit 1",
			setup: func(w *world) { w.failures["list pods"] = -1 },
			runs:  []run{{code: ExitFailed, out: []string{"listing the pods of kube-mount/mount-utilities: Internal error occurred: etcd is down"}}},
		},
		{
			name:  "API error tainting the node: exit 1, nothing changed",
			setup: func(w *world) { w.failures["update nodes"] = -1 },
			runs: []run{{code: ExitFailed, out: []string{"could not taint the node: Internal error occurred: etcd is down", "failed (exit 1) in taint"},
				after: func(t *testing.T, w *world) { untainted(t, w); oldPodKept(t, w) }}},
		},
		{
			name: "API error during the drain: warn and retry",
			setup: func(w *world) {
				w.add(consumer("default/fuse-user", fuseVol, nil))
				// The first list after the taint sees the consumer, the
				// second fails, a later one finds it evicted.
				w.evictAfter, w.evict = 1, func(w *world) {
					w.failures["list pods"] = 1
					w.evictLeft, w.evict = 2, func(w *world) { w.remove("pods", "default", "fuse-user") }
				}
			},
			runs: []run{{mutations: []string{taintAdd, deleteOld, taintDel},
				out: []string{"warning: listing the pods on node node-a: Internal error occurred: etcd is down; retrying"}}},
		},
		{
			name: "API error waiting for the new pod: warn and retry",
			setup: func(w *world) {
				w.evictAfter, w.evict = 1, func(w *world) { w.failures["list pods"] = 1 }
			},
			runs: []run{{mutations: []string{taintAdd, deleteOld, taintDel},
				out: []string{"warning: listing the pods of kube-mount/mount-utilities: Internal error occurred: etcd is down; retrying"}}},
		},
		{
			name:  "API error deleting the old pod: exit 1, the taint stays",
			setup: func(w *world) { w.failures["delete pods"] = -1 },
			runs: []run{{code: ExitFailed, mutations: []string{taintAdd},
				out: []string{"deleting " + oldName + ": Internal error occurred: etcd is down", "the node stays tainted"}}},
		},
		{
			name:  "the old pod never goes (a finalizer): exit 4 after the timeout, the taint stays",
			setup: func(w *world) { w.keep["delete pods"] = true },
			runs: []run{{cfg: timeout(2), code: ExitTimeout, mutations: []string{taintAdd},
				out: []string{"deleting " + oldName + ": timed out after 2 s waiting for the pod to be gone", "timed out (exit 4) in delete"}}},
		},
		{
			name:  "the new pod never gets Ready: exit 4 after the timeout, the taint stays",
			setup: func(w *world) { notReadyNewPod(w) },
			runs: []run{{cfg: timeout(3), code: ExitTimeout, mutations: []string{taintAdd, deleteOld},
				out: []string{"is not Ready); the node stays tainted", "kubectl taint nodes node-a nodeplug.io/mount-utilities-upgrade:NoExecute-", "timed out (exit 4) in ready"}}},
		},
	})
}

func TestUpgradeInterrupted(t *testing.T) {
	runCases(t, []upgradeCase{
		{
			name: "interrupted in the drain: exit 130, say how to finish",
			setup: func(w *world) {
				w.add(consumer("default/fuse-user", fuseVol, nil))
				w.evictAfter, w.evict = 2, func(w *world) { w.cancel() }
			},
			runs: []run{{code: ExitInterrupted, mutations: []string{taintAdd},
				out: []string{"[node-a] interrupted in drain. If the node is tainted", "interrupted in drain: "}}},
		},
	})
}

// TestUpgradeLabels: the plugins come from the old pod's mount labels.
func TestUpgradeLabels(t *testing.T) {
	relabel := func(labels map[string]string) func(w *world) {
		return func(w *world) {
			p := w.pod(testNS, oldName)
			for k, v := range labels {
				if v == "" {
					delete(p.Labels, k)
				} else {
					p.Labels[k] = v
				}
			}
			w.update(p, testNS)
			w.add(consumer("default/fuse-user", fuseVol, tolerateAll))
		}
	}
	runCases(t, []upgradeCase{
		{
			name:  "a malformed flex label is ignored with a warning",
			setup: relabel(map[string]string{"flexvolume.mount.kubernetes.io/nodeplug.io_2ffuse": "", "flexvolume.mount.kubernetes.io/bad_zz": "true"}),
			runs: []run{{mutations: []string{taintAdd, deleteOld, taintDel},
				out: []string{`warning: label key "flexvolume.mount.kubernetes.io/bad_zz": bad escape`, "serves: kubernetes.io/local-volume\n"}}},
		},
		{
			name: "no mount label: it serves nothing and is upgraded",
			setup: relabel(map[string]string{"flexvolume.mount.kubernetes.io/nodeplug.io_2ffuse": "",
				"mount.kubernetes.io/local-volume": ""}),
			runs: []run{{mutations: []string{taintAdd, deleteOld, taintDel}, out: []string{"serves no volume plugin (no mount label)"}}},
		},
		{
			name:  "an in-tree plugin it cannot see in pods: only the node's status counts",
			setup: relabel(map[string]string{"mount.kubernetes.io/cephfs": "true"}),
			runs: []run{{code: ExitRefused, mutations: nil,
				out: []string{"pods' volumes of kubernetes.io/cephfs are not recognised"}}},
		},
	})
}
