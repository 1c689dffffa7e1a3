package mounter

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	"k8s.io/mount-utils"
	utilexec "k8s.io/utils/exec"

	"github.com/nodeplug/nodeplug/pkg/mountpod"
	"github.com/nodeplug/nodeplug/pkg/util/testutil"
)

// nsPod is a "mount pod" made of real kernel parts: a process in a mount
// namespace of its own, into which commands enter with nsenter, as the
// runtime's exec does. With shared, the namespace's copy of the kubelet
// root dir is a peer of the host's (what Bidirectional propagation gives);
// without, it is private (a DaemonSet that forgot mountPropagation).
type nsPod struct{ pid string }

func startNSPod(t *testing.T, shared bool) *nsPod {
	t.Helper()
	prop := "private"
	if shared {
		prop = "unchanged"
	}
	cmd := exec.Command("unshare", "--mount", "--propagation", prop, "sleep", "600")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	pid := strconv.Itoa(cmd.Process.Pid)
	// unshare execs sleep once the namespace is made.
	for i := 0; ; i++ {
		if self, err := os.Readlink("/proc/self/ns/mnt"); err == nil {
			if its, err := os.Readlink("/proc/" + pid + "/ns/mnt"); err == nil && its != self {
				break
			}
		}
		if i == 1000 {
			t.Fatal("the namespace process never left the host's mount namespace")
		}
		unix.Nanosleep(&unix.Timespec{Nsec: 1e6}, nil)
	}
	return &nsPod{pid: pid}
}

// ExecInPod implements podexec.PodExecutor: every command runs in the
// pod's mount namespace.
func (p *nsPod) ExecInPod(ctx context.Context, _ mountpod.Target, argv []string, _ time.Duration) ([]byte, []byte, error) {
	cmd := exec.CommandContext(ctx, "nsenter", append([]string{"-t", p.pid, "-m", "--"}, argv...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if ee, ok := errors.AsType[*exec.ExitError](err); ok {
		err = utilexec.CodeExitError{Err: err, Code: ee.ExitCode()}
	}
	return stdout.Bytes(), stderr.Bytes(), err
}

func (p *nsPod) sees(t *testing.T, target string) bool {
	raw, err := os.ReadFile("/proc/" + p.pid + "/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(raw), "\n") {
		if f := strings.Fields(l); len(f) > 4 && f[4] == target {
			return true
		}
	}
	return false
}

// TestMounterRealNamespaces runs the Mounter against real mounts: the
// kernel decides what propagates, not a model.
func TestMounterRealNamespaces(t *testing.T) {
	testutil.RequireMount(t)
	testutil.RequireCommand(t, "unshare", "nsenter", "mount", "umount")
	root, err := os.MkdirTemp("/tmp", "np-mounter-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(root) })
	// The kubelet's root dir is a shared mount (ensureSharedRoot).
	if err := unix.Mount(root, root, "", unix.MS_BIND, ""); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = unix.Unmount(root, unix.MNT_DETACH) })
	if err := unix.Mount("", root, "", unix.MS_SHARED|unix.MS_REC, ""); err != nil {
		t.Fatal(err)
	}
	device := filepath.Join(root, "plugins/kubernetes.io/local-volume/mounts/pv1")
	consumer := filepath.Join(root, "pods/u/volumes/kubernetes.io~local-volume/pv1")
	for _, d := range []string{device, consumer} {
		if err := os.MkdirAll(d, 0o750); err != nil {
			t.Fatal(err)
		}
	}
	host := mount.New("")
	served := finder{served: map[string]bool{"kubernetes.io/local-volume": true}}
	hostSees := func(p string) bool { ok, _ := host.IsMountPoint(p); return ok }

	t.Run("Bidirectional: the pod's mount reaches the host, and its unmount too", func(t *testing.T) {
		pod := startNSPod(t, true)
		m := New(context.Background(), host, root, newRouter(&served, pod))
		if err := m.Mount("none", device, "mqueue", nil); err != nil {
			t.Fatal(err)
		}
		if !hostSees(device) {
			t.Fatal("the host does not see the mount")
		}
		if err := m.Unmount(device); err != nil {
			t.Fatal(err)
		}
		if hostSees(device) || pod.sees(t, device) {
			t.Fatal("still mounted after Unmount")
		}
	})
	t.Run("private: the pod's mount is undone and the mount fails naming the fix", func(t *testing.T) {
		pod := startNSPod(t, false)
		m := New(context.Background(), host, root, newRouter(&served, pod))
		err := m.Mount("none", device, "mqueue", nil)
		var np *NotPropagatedError
		if !errors.As(err, &np) || !strings.Contains(err.Error(), "mountPropagation: Bidirectional") {
			t.Fatalf("err %v, want a NotPropagatedError naming the fix", err)
		}
		if hostSees(device) || pod.sees(t, device) {
			t.Fatalf("left mounted: host %v, pod %v", hostSees(device), pod.sees(t, device))
		}
	})
	t.Run("private: a host bind mount the pod cannot see is unmounted on the host", func(t *testing.T) {
		pod := startNSPod(t, false)
		m := New(context.Background(), host, root, newRouter(&served, pod))
		if err := m.Mount(device, consumer, "", []string{"bind"}); err != nil {
			t.Fatal(err)
		}
		if !hostSees(consumer) || pod.sees(t, consumer) {
			t.Fatalf("set-up: host %v, pod %v", hostSees(consumer), pod.sees(t, consumer))
		}
		if err := m.Unmount(consumer); err != nil {
			t.Fatal(err)
		}
		if hostSees(consumer) {
			t.Fatal("the bind mount is left on the host")
		}
	})
}
