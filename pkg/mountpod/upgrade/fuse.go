package upgrade

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"

	"github.com/nodeplug/nodeplug/pkg/mountpod"
)

// fuseProbe runs under sh in the old mount pod: its mount table, the line
// "#fuse-fds", then one line per /dev/fuse descriptor of the container's
// processes, "/proc/PID/fd/FD CONNECTION". CONNECTION is the fdinfo's
// fuse_connection (the kernel's dev_t of the FUSE mount it serves), "-"
// when the fdinfo has none (a kernel before 6.16, or a descriptor not
// mounted yet). It exits non-zero if cat fails.
const fuseProbe = `cat /proc/self/mountinfo || exit 1
echo "#fuse-fds"
for f in /proc/[0-9]*/fd/*; do
  [ "$f" -ef /dev/fuse ] || continue
  c=-
  while read -r k v; do [ "$k" = fuse_connection: ] && c=$v; done <"${f%/fd/*}/fdinfo/${f##*/}"
  echo "$f $c"
done 2>/dev/null
exit 0`

const fdsMarker = "#fuse-fds"

// fuseMounts is what the probe's output says.
type fuseMounts struct {
	own     []string // mount points whose connection a descriptor of the pod serves
	outside []string // mount points no descriptor of the pod serves
	// unknown says why every FUSE mount counts ("" when it can tell):
	// "kernel" or "connection N".
	unknown string
}

// parseProbe reads the probe's output. A FUSE mount (type fuse, fuse.* or
// fuseblk) is the pod's own when a descriptor serves its connection,
// MAJOR * 2^20 + MINOR of its device. When no descriptor names a connection
// but some exist, or one names a connection no FUSE mount has, it cannot
// tell, and every FUSE mount counts. ok is false when the output holds no
// mount table.
func parseProbe(out []byte) (m fuseMounts, ok bool) {
	type mount struct{ dev, point string }
	var mounts []mount
	served := map[string]bool{}
	devs := map[string]bool{}
	fds, named, inFds, sawTable := 0, false, false, false
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		line := sc.Text()
		f := strings.Fields(line)
		switch {
		case line == fdsMarker:
			inFds = true
		case inFds && len(f) >= 2:
			fds++
			if f[1] != "-" {
				named, served[f[1]] = true, true
			}
		case !inFds:
			sep := indexOf(f, "-")
			sawTable = sawTable || sep >= 6
			if sep >= 6 && sep+1 < len(f) && strings.HasPrefix(f[sep+1], "fuse") {
				dev := devNumber(f[2])
				mounts, devs[dev] = append(mounts, mount{dev, f[4]}), true
			}
		}
	}
	if !inFds || !sawTable {
		return m, false
	}
	if fds > 0 && !named {
		m.unknown = "kernel"
	}
	for c := range served {
		if !devs[c] {
			m.unknown = "connection " + c
		}
	}
	for _, mt := range mounts {
		if served[mt.dev] || m.unknown != "" {
			m.own = append(m.own, mt.point)
		} else {
			m.outside = append(m.outside, mt.point)
		}
	}
	if len(mounts) == 0 {
		m.unknown = ""
	}
	return m, true
}

func indexOf(f []string, s string) int {
	for i := 6; i < len(f); i++ {
		if f[i] == s {
			return i
		}
	}
	return -1
}

// devNumber turns "MAJOR:MINOR" into the kernel's dev_t, as a decimal.
func devNumber(s string) string {
	maj, min, _ := strings.Cut(s, ":")
	a, err1 := strconv.ParseUint(maj, 10, 32)
	b, err2 := strconv.ParseUint(min, 10, 32)
	if err1 != nil || err2 != nil {
		return s
	}
	return strconv.FormatUint(a<<20+b, 10)
}

// scanFuseMounts adds to inUse the FUSE mounts whose daemon runs in the old
// mount pod: they die with it. A volume's pod object is gone before the
// kubelet has unmounted it, so this is what says the unmount has happened.
// The probe runs in the container the kubelet uses (mountpod.TargetFor).
// If the mount table cannot be read, the run stops (exit 1).
func (r *nodeRun) scanFuseMounts(ctx context.Context) error {
	if r.old.Spec.HostPID {
		r.once("hostPID", fmt.Sprintf("%s runs with hostPID: it sees every FUSE daemon of the node, so FUSE mounts served from the host count too", r.old.Name))
	}
	target, err := mountpod.TargetFor(r.old)
	if err != nil {
		return r.mountTableUnreadable(ctx, containerName(r.old), err.Error())
	}
	stdout, stderr, err := r.exec.ExecInPod(ctx, target, []string{"sh", "-c", fuseProbe}, r.cfg.Timeout)
	if err != nil {
		return r.mountTableUnreadable(ctx, target.Container, strings.TrimSpace(err.Error()+" "+lastLines(stderr, 2)))
	}
	m, ok := parseProbe(stdout)
	if !ok {
		return r.mountTableUnreadable(ctx, target.Container, "no mount table in the output")
	}
	for _, p := range m.own {
		r.inUse = append(r.inUse, use{kind: useFuse, what: p})
	}
	switch {
	case m.unknown == "kernel":
		r.once("fuseUnknown", fmt.Sprintf("the kernel does not say which FUSE connection a daemon of %s serves (fdinfo has no fuse_connection before Linux 6.16): waiting for every FUSE mount in the pod, also those served from outside it", r.old.Name))
	case m.unknown != "":
		r.once("fuseUnknown", fmt.Sprintf("a /dev/fuse descriptor in %s serves %s, which no FUSE mount of its mount table has: waiting for every FUSE mount in the pod, also those served from outside it", r.old.Name, m.unknown))
	}
	outside := strings.Join(m.outside, "\n")
	if outside != "" && outside != r.said["fuseOutside"] {
		r.say("not waiting for these FUSE mounts: their daemon runs outside %s (it does not die with the pod):", r.old.Name)
		for _, p := range m.outside {
			r.lines(false, []string{"  " + p})
		}
	}
	r.said["fuseOutside"] = outside
	return nil
}

func lastLines(b []byte, n int) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], " ")
}

// containerName names the container the kubelet would use, for messages.
func containerName(pod *v1.Pod) string {
	if c := pod.Annotations[mountpod.ContainerAnnotation]; c != "" {
		return c
	}
	if len(pod.Spec.Containers) > 0 {
		return pod.Spec.Containers[0].Name
	}
	return ""
}

// mountTableUnreadable stops the run (exit 1): it removes its own taint if
// the node has one and never deletes the pod.
func (r *nodeRun) mountTableUnreadable(ctx context.Context, container, reason string) error {
	if container == "" {
		container = "?"
	}
	fmt.Fprintf(r.err, "[%s] cannot read the mount table of %s/%s (container %s): %s\n", r.node, r.cfg.Namespace, r.old.Name, container, reason)
	r.untaintAfterFailure(ctx, "nothing was changed")
	return fail(ExitFailed, fmt.Sprintf("the command needs create on pods/exec in %s, and sh and cat in the pod's image; fix that and run it again", r.cfg.Namespace),
		"stopped: without the mount table of %s the command cannot tell whether a FUSE daemon in it still serves a volume; %s was not deleted", r.old.Name, r.old.Name)
}
