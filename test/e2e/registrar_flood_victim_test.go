//go:build e2e

package e2e

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeplug/nodeplug/test/e2e/framework"
)

// registrarStages are the points of a victim's registration the
// benchmark times, in order, each after the one before: the
// registrar's socket bound, the kubelet's GetInfo and
// NotifyRegistrationStatus as the registrar logs them (klog, -v=4), and
// the driver seen in CSINode.
var registrarStages = []struct{ name, logged string }{
	{"bind", "Registration Server started"},
	{"getinfo", "Received GetInfo call"},
	{"notify", "Received NotifyRegistrationStatus call"},
	{"csinode", ""},
}

// registrarSample is one victim: its time from the registrar's start to
// the driver in CSINode, and the time of each stage from the one before
// (zero when the registrar's log did not show it).
type registrarSample struct {
	total  time.Duration
	stages []time.Duration
}

func (s registrarSample) stagesString() string {
	var parts []string
	for i, st := range registrarStages {
		parts = append(parts, fmt.Sprintf("%s %v", st.name, s.stages[i].Round(time.Millisecond)))
	}
	return strings.Join(parts, ", ")
}

// sample starts csi-hostpath as driver and, once its socket is there, the
// registrar; it returns when the driver was listed in CSINode and, after
// both were stopped, is gone from it again.
func (r *registrarRig) sample(b *testing.B, driver string) registrarSample {
	hostTmp, err := os.MkdirTemp(r.node.HostPath(b, "/tmp"), "rf")
	if err != nil {
		b.Fatal(err)
	}
	defer os.RemoveAll(hostTmp)
	dir := filepath.Join("/tmp", filepath.Base(hostTmp)) // as the node sees it
	sock := filepath.Join(dir, "csi.sock")
	stopDriver, _ := r.node.StartLogged(b, r.hostpath, []string{"-drivername=" + driver,
		"-nodeid=" + r.node.Name, "-endpoint=" + sock, "-data-dir=" + filepath.Join(dir, "data")})
	defer stopDriver()
	waitSocket(b, filepath.Join(hostTmp, "csi.sock"))

	start := time.Now()
	stopRegistrar, log := r.node.StartLogged(b, r.registrar, []string{"-v=4", "-csi-address=" + sock,
		"-kubelet-registration-path=" + sock, "-plugin-registration-path=" + r.regDir})
	seen := r.waitCSINode(b, driver, true)
	// The kubelet updates CSINode before it notifies the registrar: let
	// the notification arrive before the registrar stops.
	_ = framework.Poll(b.Context(), 2*time.Second, func(context.Context) bool {
		return strings.Contains(log.String(), registrarStages[2].logged)
	}, framework.PollEvery(5*time.Millisecond))
	stopRegistrar()
	stopDriver()
	r.waitCSINode(b, driver, false)

	s := registrarSample{total: seen.Sub(start), stages: make([]time.Duration, len(registrarStages))}
	at := loggedTimes(log.String(), start)
	prev := start
	for i, st := range registrarStages {
		t, ok := at[st.logged]
		if st.logged == "" {
			t, ok = seen, true
		}
		if !ok {
			continue
		}
		s.stages[i] = t.Sub(prev)
		prev = t
	}
	return s
}

// waitSocket waits until path exists.
func waitSocket(b *testing.B, path string) {
	err := framework.Poll(b.Context(), 30*time.Second, func(context.Context) bool {
		_, err := os.Stat(path)
		return err == nil
	}, framework.PollEvery(5*time.Millisecond))
	if err != nil {
		b.Fatalf("the CSI driver's socket %s did not appear: %v", path, err)
	}
}

// waitCSINode polls the node's CSINode every csiNodePoll until driver is
// listed (listed) or not, and returns when it saw that.
func (r *registrarRig) waitCSINode(b *testing.B, driver string, listed bool) time.Time {
	ctx := b.Context()
	deadline := time.Now().Add(2 * time.Minute)
	tick := time.NewTicker(csiNodePoll)
	defer tick.Stop()
	for {
		n, err := r.client.StorageV1().CSINodes().Get(ctx, r.node.Name, metav1.GetOptions{})
		seen := time.Now()
		if err != nil && !apierrors.IsNotFound(err) {
			b.Fatalf("CSINode %s: %v", r.node.Name, err)
		}
		has := false
		if err == nil {
			for _, d := range n.Spec.Drivers {
				has = has || d.Name == driver
			}
		}
		if has == listed {
			return seen
		}
		if seen.After(deadline) {
			b.Fatalf("driver %s listed in CSINode %s: %v after 2m, want %v", driver, r.node.Name, has, listed)
		}
		select {
		case <-ctx.Done():
			b.Fatal(ctx.Err())
		case <-tick.C:
		}
	}
}

// loggedTimes returns, for each stage's message, the klog time of its
// first line in log ("I1127 07:10:00.123456 ..."), in the year of ref.
func loggedTimes(log string, ref time.Time) map[string]time.Time {
	at := map[string]time.Time{}
	sc := bufio.NewScanner(strings.NewReader(log))
	for sc.Scan() {
		line := sc.Text()
		if len(line) < 21 {
			continue
		}
		t, err := time.ParseInLocation("0102 15:04:05.000000", line[1:21], time.Local)
		if err != nil {
			continue
		}
		t = t.AddDate(ref.Year(), 0, 0)
		for _, st := range registrarStages {
			if _, done := at[st.logged]; !done && st.logged != "" && strings.Contains(line, st.logged) {
				at[st.logged] = t
			}
		}
	}
	return at
}
