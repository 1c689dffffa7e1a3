package upgrade

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

const (
	fuseOwn   = "36 30 0:50 / /var/lib/kubelet/pods/u1/volumes/nodeplug.io~fuse/data rw shared:1 - fuse.nodeplug nodeplug-fuse rw"
	fuseHost  = "37 30 0:60 / /var/lib/kubelet/pods/u2/volumes/kubernetes.io~csi/pv-s3/mount rw shared:1 - fuse.s3fs s3fs rw"
	fuseFdOwn = "/proc/7/fd/5 50"
	ownPoint  = "/var/lib/kubelet/pods/u1/volumes/nodeplug.io~fuse/data"
	hostPoint = "/var/lib/kubelet/pods/u2/volumes/kubernetes.io~csi/pv-s3/mount"
)

func ownMountGone(t *testing.T, w *world) {
	if len(w.exec.own) != 0 {
		t.Errorf("deleted the old pod before its FUSE mount went")
	}
}

// TestUpgradeFUSE covers which FUSE mounts of the old pod the drain waits
// for.
func TestUpgradeFUSE(t *testing.T) {
	cases := []upgradeCase{
		{
			name: "a FUSE mount the old pod still serves: the delete waits for its unmount",
			setup: func(w *world) {
				w.exec.own, w.exec.fds, w.exec.unmountAfter = []string{fuseOwn}, []string{fuseFdOwn}, 3
			},
			runs: []run{{
				mutations: []string{taintAdd, deleteOld, taintDel},
				out:       []string{"  pod kube-mount/" + oldName + ": FUSE mount " + ownPoint + " (its daemon runs in that pod)"},
				after: func(t *testing.T, w *world) {
					ownMountGone(t, w)
					if c := w.exec.calls[0]; c.Namespace != testNS || c.Name != oldName || c.Container != "utilities" {
						t.Errorf("the probe ran in %s, want kube-mount/%s/utilities", c, oldName)
					}
				},
			}},
		},
		{
			name: "FUSE mounts that propagated in from the host are not waited for",
			setup: func(w *world) {
				w.exec.host = []string{fuseHost}
				// The probe runs in the container the kubelet uses.
				p := w.pod(testNS, oldName)
				p.Annotations = map[string]string{"mount.kubernetes.io/container": "helper"}
				p.Status.ContainerStatuses[0].Name = "helper"
				w.update(p, testNS)
			},
			runs: []run{{
				cfg: timeout(2), mutations: []string{taintAdd, deleteOld, taintDel},
				out: []string{"not waiting for these FUSE mounts: their daemon runs outside " + oldName, "  " + hostPoint},
				after: func(t *testing.T, w *world) {
					if c := w.exec.calls[0].Container; c != "helper" {
						t.Errorf("the probe ran in container %q, want the one the annotation names", c)
					}
				},
			}},
		},
		{
			name: "FUSE mounts from the host and the pod's own: wait for its own only",
			setup: func(w *world) {
				w.exec.host, w.exec.own, w.exec.unmountAfter = []string{fuseHost}, []string{fuseOwn}, 3
				w.exec.fds = []string{fuseFdOwn, "/proc/9/fd/3 -"}
			},
			runs: []run{{
				cfg: timeout(60), mutations: []string{taintAdd, deleteOld, taintDel},
				out:    []string{"  pod kube-mount/" + oldName + ": FUSE mount " + ownPoint + " (its daemon runs in that pod)"},
				notOut: []string{"FUSE mount " + hostPoint + " (its daemon runs in that pod)"},
				after:  ownMountGone,
			}},
		},
		{
			name: "a kernel that names no FUSE connection: wait for every FUSE mount, and say why",
			setup: func(w *world) {
				w.exec.host, w.exec.fds = []string{fuseHost}, []string{"/proc/7/fd/5 -"}
			},
			runs: []run{{
				cfg: timeout(1), code: ExitTimeout, mutations: []string{taintAdd, taintDel},
				out: []string{"the kernel does not say which FUSE connection a daemon of " + oldName + " serves",
					"  pod kube-mount/" + oldName + ": FUSE mount " + hostPoint + " (its daemon runs in that pod)"},
			}},
		},
		{
			name: "a descriptor's connection matches no FUSE mount: wait for every FUSE mount, and say why",
			setup: func(w *world) {
				w.exec.host, w.exec.fds = []string{fuseHost}, []string{"/proc/7/fd/5 99"}
			},
			runs: []run{{
				cfg: timeout(1), code: ExitTimeout, mutations: []string{taintAdd, taintDel},
				out: []string{"a /dev/fuse descriptor in " + oldName + " serves connection 99, which no FUSE mount of its mount table has: waiting for every FUSE mount"},
			}},
		},
	}
	runCases(t, cases)
}

// TestUpgradeUnreadableMountTable: without the old pod's mount table the
// run stops (exit 1), before the taint or after removing it.
func TestUpgradeUnreadableMountTable(t *testing.T) {
	cases := []upgradeCase{
		{
			name: "the mount table cannot be read during the drain: stop, untaint, keep the pod",
			setup: func(w *world) {
				w.exec.own, w.exec.fds = []string{fuseOwn}, []string{fuseFdOwn}
				w.exec.err, w.exec.failFrom = errors.New(`error: unable to upgrade connection: container not found ("utilities")`), 2
			},
			runs: []run{{
				code: ExitFailed, mutations: []string{taintAdd, taintDel},
				out: []string{"cannot read the mount table of kube-mount/" + oldName + " (container utilities): error: unable to upgrade connection",
					"removed the taint nodeplug.io/mount-utilities-upgrade:NoExecute; " + oldName + " still runs"},
				after: func(t *testing.T, w *world) { untainted(t, w); oldPodKept(t, w) },
			}},
		},
	}
	cases = append(cases, unreadableBeforeTaint()...)
	runCases(t, cases)
}

// unreadableBeforeTaint: the old pod's mount table cannot be read (no
// pods/exec right, no shell, nothing printed): stop before tainting, exit
// 1, with and without --dry-run.
func unreadableBeforeTaint() []upgradeCase {
	var cases []upgradeCase
	for _, c := range []struct{ what, message string }{
		{"forbidden", `pods "mount-utilities-old01" is forbidden: User "ops" cannot create resource "pods/exec" in API group "" in the namespace "kube-mount"`},
		{"no shell", `Internal error occurred: error executing command in container: exec: "sh": executable file not found in $PATH`},
		{"empty output", "no mount table in the output"},
		{"container not running", "container \"utilities\" of mount pod kube-mount/" + oldName + " is not running"},
	} {
		want := run{code: ExitFailed, out: []string{
			"cannot read the mount table of kube-mount/" + oldName + " (container utilities): " + c.message,
			"stopped: without the mount table of " + oldName + " the command cannot tell whether a FUSE daemon in it still serves a volume",
			"nothing was changed"}, after: oldPodKept}
		dry := want
		dry.cfg = dryRun
		cases = append(cases, upgradeCase{
			name: "the old pod's mount table cannot be read, " + c.what + ": stop before tainting, exit 1",
			setup: func(w *world) {
				switch c.what {
				case "empty output":
					w.exec.empty = true
				case "container not running":
					p := w.pod(testNS, oldName)
					p.Status.ContainerStatuses[0].State.Running = nil
					w.update(p, testNS)
				default:
					w.exec.err = errors.New(c.message)
				}
			},
			runs: []run{want, dry},
		})
	}
	return cases
}

func TestParseProbe(t *testing.T) {
	table := "22 1 0:21 / / rw - overlay overlay rw\n"
	cases := []struct {
		name         string
		out          string
		ok           bool
		own, outside []string
		unknown      string
	}{
		{name: "no FUSE mount", out: table + fdsMarker + "\n", ok: true},
		{name: "own mount", out: table + fuseOwn + "\n" + fdsMarker + "\n" + fuseFdOwn + "\n", ok: true, own: []string{ownPoint}},
		{name: "host mount", out: table + fuseHost + "\n" + fdsMarker + "\n", ok: true, outside: []string{hostPoint}},
		{name: "old kernel", out: table + fuseHost + "\n" + fdsMarker + "\n/proc/1/fd/3 -\n", ok: true, own: []string{hostPoint}, unknown: "kernel"},
		{name: "stray connection", out: table + fuseHost + "\n" + fdsMarker + "\n/proc/1/fd/3 7\n", ok: true, own: []string{hostPoint}, unknown: "connection 7"},
		{name: "descriptors but no FUSE mount", out: table + fdsMarker + "\n/proc/1/fd/3 -\n", ok: true},
		{name: "fuseblk counts", out: table + strings.Replace(fuseOwn, "fuse.nodeplug", "fuseblk", 1) + "\n" + fdsMarker + "\n" + fuseFdOwn + "\n", ok: true, own: []string{ownPoint}},
		{name: "no marker", out: table},
		{name: "no mount table", out: fdsMarker + "\n"},
		{name: "nothing", out: ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m, ok := parseProbe([]byte(tc.out))
			if ok != tc.ok || !slices.Equal(m.own, tc.own) || !slices.Equal(m.outside, tc.outside) || m.unknown != tc.unknown {
				t.Errorf("got %+v ok=%v, want own %v outside %v unknown %q ok=%v", m, ok, tc.own, tc.outside, tc.unknown, tc.ok)
			}
		})
	}
}
