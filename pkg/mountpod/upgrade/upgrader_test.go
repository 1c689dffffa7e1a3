package upgrade

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const (
	taintAdd  = "taint node-a " + TaintKey + "=" + oldName + ":NoExecute"
	taintDel  = "untaint node-a"
	deleteOld = "delete pod " + oldName
)

func oldPodKept(t *testing.T, w *world) {
	if w.pod(testNS, oldName) == nil {
		t.Errorf("the old pod was deleted")
	}
}

func untainted(t *testing.T, w *world) {
	if got := w.taints(); len(got) != 0 {
		t.Errorf("taints %v, want none", got)
	}
}

func onlyNewPod(w *world) {
	w.remove("pods", testNS, oldName)
	w.add(w.newPod)
}

func notReadyNewPod(w *world) {
	w.newPod.Status.Conditions[0].Status = v1.ConditionFalse
}

func dryRun(c *Config) { c.DryRun = true }

func timeout(s int) func(*Config) {
	return func(c *Config) { c.Timeout = secondsDuration(s) }
}

// TestUpgrade covers the decisions of whole runs: what it changes, what it
// says and its exit code.
func TestUpgrade(t *testing.T) {
	runCases(t, []upgradeCase{
		{
			name: "already up to date: no changes",
			setup: func(w *world) {
				onlyNewPod(w)
				w.add(consumer("default/fuse-user", fuseVol, nil))
				// A pod with the DaemonSet's labels that it does not own, and
				// one it owns without a revision label, being deleted:
				// neither is the node's mount pod.
				stray := mountPodObj("stray", "oldhash", "x", false)
				stray.OwnerReferences = nil
				going := mountPodObj("going", "", "x", false)
				delete(going.Labels, "controller-revision-hash")
				going.DeletionTimestamp = &metav1.Time{}
				going.Finalizers = []string{"test"}
				w.add(stray, going)
			},
			runs: []run{
				{out: []string{"[node-a] up to date: " + newName + " runs revision newhash and is Ready", `(?m)^\[node-a\] check: [0-9]+\.[0-9] s$`}},
				{cfg: dryRun},
			},
		},
		{
			name: "current pod not Ready yet: wait for it, change nothing",
			setup: func(w *world) {
				notReadyNewPod(w)
				onlyNewPod(w)
				w.readyLeft = 3
			},
			runs: []run{{out: []string{"[node-a] new pod " + newName + " is Ready, image " + image2}}},
		},
		{
			name: "in use by a pod that tolerates the taint: refuse before tainting",
			setup: func(w *world) {
				w.add(consumer("default/tolerant", fuseVol, tolerateKey), consumer("default/evictable", pvcVol, nil))
			},
			runs: []run{{
				code: ExitRefused,
				out: []string{"never delete a mount pod while a volume it serves is mounted: a FUSE daemon dies with its pod",
					"pod default/tolerant: volume data of nodeplug.io/fuse (tolerates the taint: not evicted)", "nothing was changed"},
				notOut: []string{"evictable"},
				after:  func(t *testing.T, w *world) { untainted(t, w); oldPodKept(t, w) },
			}},
		},
		{
			name: "in use by a tolerating pod that comes after the taint: refuse, untaint, keep the pod",
			setup: func(w *world) {
				w.add(consumer("default/fuse-user", fuseVol, nil))
				w.evictAfter = 1
				w.evict = func(w *world) {
					w.remove("pods", "default", "fuse-user")
					w.add(consumer("default/late", pvcVol, tolerateAll))
				}
			},
			runs: []run{{
				code:      ExitRefused,
				mutations: []string{taintAdd, taintDel},
				out: []string{"pod default/late: volume disk (claim disk, PV local-pv-1) of kubernetes.io/local-volume (tolerates the taint: not evicted)",
					"removed the taint nodeplug.io/mount-utilities-upgrade:NoExecute; " + oldName + " still runs"},
				after: func(t *testing.T, w *world) { untainted(t, w); oldPodKept(t, w) },
			}},
		},
		happyPath(),
		{
			name: "dry run: no mutating calls",
			setup: func(w *world) {
				w.update(node(nil, []v1.UniqueVolumeName{"kubernetes.io/local-volume/local-pv-1"}, nil), "")
				w.add(consumer("default/fuse-user", fuseVol, nil))
			},
			runs: []run{
				{cfg: dryRun, out: []string{
					"dry run: would taint nodeplug.io/mount-utilities-upgrade=" + oldName + ":NoExecute",
					"  pod default/fuse-user: volume data of nodeplug.io/fuse",
					"dry run: would delete pod kube-mount/" + oldName + " (revision oldhash -> newhash)",
					"dry run: would remove the taint"}},
				{
					before: func(w *world) { w.add(consumer("default/tolerant", fuseVol, tolerateAll)) },
					cfg:    dryRun, code: ExitRefused, out: []string{"nothing was changed"},
				},
			},
		},
	})
}

// TestUpgradeResume: a run after an interrupted one finishes it, and the
// waits that time out say what is left.
func TestUpgradeResume(t *testing.T) {
	runCases(t, []upgradeCase{
		{
			name: "resumed after an interruption: taint present, old pod gone, new pod Ready: untaint only",
			setup: func(w *world) {
				w.update(node(taintOld, nil, nil), "")
				onlyNewPod(w)
			},
			runs: []run{{
				mutations: []string{taintDel},
				out:       []string{"resuming: the node is tainted nodeplug.io/mount-utilities-upgrade=" + oldName + ":NoExecute and that pod is gone"},
				after:     untainted,
			}},
		},
		{
			name:  "resumed after an interruption in the drain: delete and untaint, no second taint",
			setup: func(w *world) { w.update(node(taintOld, nil, nil), "") },
			runs:  []run{{mutations: []string{deleteOld, taintDel}, out: []string{"already tainted", "resuming"}}},
		},
		{
			name:  "new pod not Ready in time: exit 4, taint kept; the next run finishes",
			setup: notReadyNewPod,
			runs: []run{
				{
					cfg: timeout(1), code: ExitTimeout, mutations: []string{taintAdd, deleteOld},
					out: []string{"no Ready pod of kube-mount/mount-utilities revision newhash on the node after 1 s (" + newName + " is not Ready); the node stays tainted"},
					after: func(t *testing.T, w *world) {
						if got := w.taints(); len(got) != 1 || got[0] != TaintKey+"="+oldName+":NoExecute" {
							t.Errorf("taints %v, want the upgrade taint", got)
						}
					},
				},
				{before: func(w *world) { w.setReady(newName, true) }, mutations: []string{taintDel}},
			},
		},
		{
			name: "drain timeout: name what is in use, untaint, exit 4",
			setup: func(w *world) {
				w.update(node(nil, nil, []v1.AttachedVolume{{Name: "flexvolume-nodeplug.io/fuse/vol-1", DevicePath: "/dev/x"}}), "")
				w.add(consumer("default/stuck", fuseVol, tolerateSome))
			},
			runs: []run{{
				cfg: timeout(1), code: ExitTimeout, mutations: []string{taintAdd, taintDel},
				out: []string{"timed out after 1 s; still in use:", "  pod default/stuck: volume data of nodeplug.io/fuse",
					"  node node-a: flexvolume-nodeplug.io/fuse/vol-1 attached (status.volumesAttached)"},
				after: untainted,
			}},
		},
	})
}

func happyPath() upgradeCase {
	return upgradeCase{
		name: "happy path: taint, drain, delete, wait for Ready, untaint",
		setup: func(w *world) {
			w.update(node(nil, []v1.UniqueVolumeName{"kubernetes.io/local-volume/local-pv-1", "kubernetes.io/csi/other^v"},
				[]v1.AttachedVolume{{Name: "kubernetes.io/csi/other^v"}}), "")
			finished := consumer("default/finished", fuseVol, tolerateAll)
			finished.Status.Phase = v1.PodSucceeded
			elsewhere := consumer("default/elsewhere", fuseVol, tolerateAll)
			elsewhere.Spec.NodeName = "node-b"
			w.add(consumer("default/fuse-user", fuseVol, nil), consumer("default/local-user", pvcVol, tolerateSome),
				consumer("default/unrelated", otherVols, tolerateAll), finished, elsewhere,
				consumer("kube-mount/helper", fuseVol, tolerateAll))
			w.evictAfter = 3
			w.evict = func(w *world) {
				w.remove("pods", "default", "fuse-user")
				w.remove("pods", "default", "local-user")
				w.setVolumes([]v1.UniqueVolumeName{"kubernetes.io/csi/other^v"}, nil)
			}
			notReadyNewPod(w)
			w.readyAfter = 3
		},
		runs: []run{
			{
				mutations: []string{taintAdd, deleteOld, taintDel},
				out: []string{
					"[node-a] pod " + oldName + " runs revision oldhash; the DaemonSet's is newhash",
					"[node-a] pod " + oldName + " serves: kubernetes.io/local-volume nodeplug.io/fuse",
					"  pod default/fuse-user: volume data of nodeplug.io/fuse",
					"  pod default/local-user: volume disk (claim disk, PV local-pv-1) of kubernetes.io/local-volume",
					"  node node-a: kubernetes.io/local-volume/local-pv-1 in use (status.volumesInUse)",
					"[node-a] new pod " + newName + " is Ready, image " + image2,
					"[node-a] upgraded " + oldName + " -> " + newName + " (" + image2 + "): ",
					`(?m)^\[node-a\] check: [0-9]+\.[0-9] s$`, `(?m)^\[node-a\] taint: [0-9]+\.[0-9] s$`,
					`(?m)^\[node-a\] drain: [0-9]+\.[0-9] s$`, `(?m)^\[node-a\] delete: [0-9]+\.[0-9] s$`,
					`(?m)^\[node-a\] ready: [0-9]+\.[0-9] s$`, `(?m)^\[node-a\] untaint: [0-9]+\.[0-9] s$`,
					`(?m)^  \[node-a\] upgraded .* s \(check [0-9.]+ s, taint [0-9.]+ s, drain [0-9.]+ s, delete [0-9.]+ s, ready [0-9.]+ s, untaint [0-9.]+ s\)$`,
				},
				notOut: []string{"unrelated", "finished", "elsewhere", "helper", "other^v"},
				after: func(t *testing.T, w *world) {
					untainted(t, w)
					if w.pod(testNS, oldName) != nil {
						t.Errorf("the old pod is still there")
					}
					if w.readyLeft != 0 {
						t.Errorf("untainted before the new pod was Ready")
					}
				},
			},
			{out: []string{"[node-a] up to date"}},
		},
	}
}
