package flexadapter

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/kubernetes/pkg/volume"
)

func TestConsumerViewsShareOneWatcher(t *testing.T) {
	root := t.TempDir()
	log := filepath.Join(t.TempDir(), "calls")
	p := newTestProber(t, root, fastOptions())
	adc, _ := newPluginMgr(t, p.NewConsumerView(), nil)
	selinux, _ := newPluginMgr(t, p.NewConsumerView(), nil)
	install(t, root, "example.com~nfs", "nfs", recordingDriver(log, `{"attach":true}`, notSupported))
	eventually(t, "attach/detach controller sees the driver", attachable(adc, "example.com/nfs"))
	eventually(t, "SELinux controller sees the driver", attachable(selinux, "example.com/nfs"))
	if got := calls(t, log); len(got) != 1 || got[0] != "init" {
		t.Errorf("driver calls %q, want a single init shared by both consumers", got)
	}
}

func TestProbeUnchanged(t *testing.T) {
	root := t.TempDir()
	install(t, root, "example.com~nfs", "nfs", recordingDriver(filepath.Join(t.TempDir(), "log"), `{"attach":false}`, success))
	p := newTestProber(t, root, fastOptions())
	view := p.NewConsumerView()
	if err := view.Init(); err != nil {
		t.Fatal(err)
	}
	events, err := view.Probe()
	if err != nil || len(events) != 1 || events[0].Op != volume.ProbeAddOrUpdate || events[0].PluginName != "example.com/nfs" {
		t.Fatalf("first Probe = %+v, %v", events, err)
	}
	events, err = view.Probe()
	if events != nil || err != nil {
		t.Fatalf("second Probe = %+v, %v; want nil, nil", events, err)
	}
	if n := testing.AllocsPerRun(1000, func() { _, _ = view.Probe() }); n != 0 {
		t.Errorf("unchanged Probe allocates %v times", n)
	}
}

func TestAttachableToNonAttachable(t *testing.T) {
	root := t.TempDir()
	log := filepath.Join(t.TempDir(), "log")
	p := newTestProber(t, root, fastOptions())
	mgr, _ := newPluginMgr(t, p.NewConsumerView(), nil)
	install(t, root, "example.com~nfs", "nfs", recordingDriver(log, `{"attach":true}`, success))
	eventually(t, "attachable", attachable(mgr, "example.com/nfs"))
	if pl, err := mgr.FindDeviceMountablePluginByName("example.com/nfs"); err != nil || pl == nil {
		t.Errorf("attachable plugin is not device-mountable: %v", err)
	}
	install(t, root, "example.com~nfs", "nfs", recordingDriver(log, `{"attach":false}`, success))
	eventually(t, "non-attachable", func() bool { return findable(mgr, "example.com/nfs")() && !attachable(mgr, "example.com/nfs")() })
	if pl, _ := mgr.FindDeviceMountablePluginByName("example.com/nfs"); pl != nil {
		t.Error("non-attachable plugin is device-mountable")
	}
	install(t, root, "example.com~nfs", "nfs", recordingDriver(log, `{}`, success))
	eventually(t, "attachable again (default capability)", attachable(mgr, "example.com/nfs"))
}

func TestProbeReportsProblemsOnce(t *testing.T) {
	root := t.TempDir()
	install(t, root, "example.com~bad", "bad", failInit)
	p := newTestProber(t, root, fastOptions())
	view := p.NewConsumerView()
	_, err := view.Probe()
	if err == nil || !strings.Contains(err.Error(), "backend down") {
		t.Fatalf("first Probe error %v, want the init failure", err)
	}
	install(t, root, "example.com~good", "good", recordingDriver(filepath.Join(t.TempDir(), "log"), `{"attach":false}`, success))
	eventually(t, "second driver", func() bool {
		events, err := view.Probe()
		if err != nil {
			t.Fatalf("problem reported again: %v", err)
		}
		return len(events) == 1 && events[0].PluginName == "example.com/good"
	})
}

// TestProbeDuringInitReturnsTheNewDriver: a lookup that arrives while a new
// driver's init runs waits for it (bounded by SettleWait) and finds the
// driver, where it would otherwise fail and be retried with backoff.
func TestProbeDuringInitReturnsTheNewDriver(t *testing.T) {
	root := t.TempDir()
	opts := fastOptions()
	opts.SettleWait = 20 * time.Second
	p := newTestProber(t, root, opts)
	view := p.NewConsumerView()
	if events, err := view.Probe(); events != nil || err != nil {
		t.Fatalf("Probe before the install = %+v, %v", events, err)
	}
	install(t, root, "example.com~slow", "slow",
		"#!/bin/sh\nsleep 0.3\necho '{\"status\":\"Success\",\"capabilities\":{\"attach\":false}}'\n")
	eventually(t, "the init to start", func() bool { return p.Library().Settling() != nil })
	events, err := view.Probe()
	if err != nil || len(events) != 1 || events[0].Op != volume.ProbeAddOrUpdate || events[0].PluginName != "example.com/slow" {
		t.Fatalf("Probe during the init = %+v, %v; want the new driver", events, err)
	}
}
