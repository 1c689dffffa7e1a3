package podexec

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"strings"
	"sync"
	"testing"
	"time"

	utilexec "k8s.io/utils/exec"
	testingexec "k8s.io/utils/exec/testing"

	"github.com/nodeplug/nodeplug/pkg/mountpod"
)

// fakeFinder serves the plugins in pods; err, when set, is returned for
// all. It counts its lookups and records the node preferences asked for.
type fakeFinder struct {
	pods      map[string]mountpod.Target
	err       error
	lookups   int
	preferred []string
}

func (f *fakeFinder) FindPreferring(plugin, node string) (mountpod.Target, error) {
	f.lookups++
	if node != "" {
		f.preferred = append(f.preferred, node)
	}
	if f.err != nil {
		return mountpod.Target{}, f.err
	}
	if t, ok := f.pods[plugin]; ok {
		return t, nil
	}
	key, _ := mountpod.LabelKey(plugin)
	return mountpod.Target{}, &mountpod.NoPodError{Plugin: plugin, Label: key, Namespace: "kube-mount", Node: "n"}
}

// fakePods records what ran in which pod.
type fakePods struct {
	mu    sync.Mutex
	calls []string
	code  int
	delay time.Duration
}

func (p *fakePods) ExecInPod(ctx context.Context, t mountpod.Target, argv []string, timeout time.Duration) ([]byte, []byte, error) {
	p.mu.Lock()
	p.calls = append(p.calls, t.Name+":"+strings.Join(argv, " "))
	p.mu.Unlock()
	select {
	case <-time.After(p.delay):
	case <-ctx.Done():
		return nil, nil, ctx.Err()
	}
	if p.code != 0 {
		return []byte("out"), []byte("err"), utilexec.CodeExitError{Err: errors.New("exit"), Code: p.code}
	}
	return []byte("out"), []byte("err"), nil
}

func hostExec(ran *[]string) *testingexec.FakeExec {
	fe := &testingexec.FakeExec{ExactOrder: false}
	for range 4 {
		fe.CommandScript = append(fe.CommandScript, func(cmd string, args ...string) utilexec.Cmd {
			*ran = append(*ran, "host:"+cmd+" "+strings.Join(args, " "))
			return &testingexec.FakeCmd{CombinedOutputScript: []testingexec.FakeAction{func() ([]byte, []byte, error) { return []byte("host"), nil, nil }}}
		})
	}
	return fe
}

func lookPath(have ...string) func(string) (string, error) {
	return func(f string) (string, error) {
		for _, h := range have {
			if h == f {
				return "/usr/sbin/" + f, nil
			}
		}
		return "", utilexec.ErrExecutableNotFound
	}
}

const localPlugin = "kubernetes.io/local-volume"

func TestForPlugin(t *testing.T) {
	mp := mountpod.Target{Name: "mp", ContainerID: "c"}
	cases := map[string]struct {
		finder   *fakeFinder
		hostHas  []string
		want     string // what ran
		wantErrs []string
		isErr    []error
	}{
		"pod serves the plugin":       {finder: &fakeFinder{pods: map[string]mountpod.Target{localPlugin: mp}}, hostHas: []string{"mkfs.ext4"}, want: "mp:mkfs.ext4 -F /dev/x"},
		"no pod, host has it":         {finder: &fakeFinder{}, hostHas: []string{"mkfs.ext4"}, want: "host:mkfs.ext4 -F /dev/x"},
		"pod of another plugin only":  {finder: &fakeFinder{pods: map[string]mountpod.Target{"kubernetes.io/nfs": mp}}, hostHas: []string{"mkfs.ext4"}, want: "host:mkfs.ext4 -F /dev/x"},
		"neither pod nor host has it": {finder: &fakeFinder{}, wantErrs: []string{"mkfs.ext4 is not installed on the host", "mount.kubernetes.io/local-volume=true", "kube-mount"}, isErr: []error{utilexec.ErrExecutableNotFound}},
		"cache not synced: no guess":  {finder: &fakeFinder{err: mountpod.ErrNotSynced}, hostHas: []string{"mkfs.ext4"}, isErr: []error{mountpod.ErrNotSynced}},
		"pod container not running":   {finder: &fakeFinder{err: errors.New("container not running")}, hostHas: []string{"mkfs.ext4"}, wantErrs: []string{"container not running"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var ran []string
			pods := &fakePods{}
			r := NewRouter(tc.finder, pods, hostExec(&ran), Options{LookPath: lookPath(tc.hostHas...)})
			_, err := r.ForPlugin(localPlugin).Command("mkfs.ext4", "-F", "/dev/x").CombinedOutput()
			ran = append(ran, pods.calls...)
			if tc.want != "" {
				if err != nil || len(ran) != 1 || ran[0] != tc.want {
					t.Fatalf("ran %v, err %v; want %q", ran, err, tc.want)
				}
				return
			}
			if err == nil || len(ran) != 0 {
				t.Fatalf("ran %v, err %v; want an error and nothing run", ran, err)
			}
			for _, s := range tc.wantErrs {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not contain %q", err, s)
				}
			}
			for _, e := range tc.isErr {
				if !errors.Is(err, e) {
					t.Errorf("error %v is not %v", err, e)
				}
			}
		})
	}
}

func TestPluginLookPath(t *testing.T) {
	mp := mountpod.Target{Name: "mp"}
	r := NewRouter(&fakeFinder{pods: map[string]mountpod.Target{localPlugin: mp}}, &fakePods{}, &testingexec.FakeExec{}, Options{LookPath: lookPath()})
	if p, err := r.ForPlugin(localPlugin).LookPath("blkid"); err != nil || p != "blkid" {
		t.Fatalf("with pod: %q, %v", p, err)
	}
	if _, err := r.ForPlugin("kubernetes.io/nfs").LookPath("mount.nfs"); !errors.Is(err, utilexec.ErrExecutableNotFound) {
		t.Fatalf("without pod or host: %v", err)
	}
}

func TestForFlexDrivers(t *testing.T) {
	mp := mountpod.Target{Name: "mp"}
	finder := &fakeFinder{pods: map[string]mountpod.Target{"nodeplug.io/fuse": mp}}
	cases := map[string]struct {
		execPath string
		want     string
		notExist bool
		unsynced bool
		wantErr  error
	}{
		"host dir, cache not synced: host": {execPath: "/flex/nodeplug.io~fuse/fuse", unsynced: true, want: "host:/flex/nodeplug.io~fuse/fuse mount /dir {}"},
		"pod-only dir, cache not synced":   {execPath: "/root/pod-drivers/nodeplug.io~fuse/fuse", unsynced: true, wantErr: mountpod.ErrNotSynced},
		"host dir, pod serves":             {execPath: "/flex/nodeplug.io~fuse/fuse", want: "mp:" + mountpod.FlexDriverDir + "/nodeplug.io~fuse/fuse mount /dir {}"},
		"pod-only dir, pod serves":         {execPath: "/root/pod-drivers/nodeplug.io~fuse/fuse", want: "mp:" + mountpod.FlexDriverDir + "/nodeplug.io~fuse/fuse mount /dir {}"},
		"host dir, no pod":                 {execPath: "/flex/acme~lvm/lvm", want: "host:/flex/acme~lvm/lvm mount /dir {}"},
		"pod-only dir, pod gone":           {execPath: "/root/pod-drivers/acme~lvm/lvm", notExist: true},
		"no vendor, no pod, on host":       {execPath: "/flex/lvm/lvm", want: "host:/flex/lvm/lvm mount /dir {}"},
		"a bare utility, not a driver":     {execPath: "blkid", want: "host:blkid mount /dir {}"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var ran []string
			pods := &fakePods{}
			finder := finder
			if tc.unsynced {
				finder = &fakeFinder{err: mountpod.ErrNotSynced}
			}
			r := NewRouter(finder, pods, hostExec(&ran), Options{LookPath: lookPath("/flex/nodeplug.io~fuse/fuse", "/flex/acme~lvm/lvm", "/flex/lvm/lvm")})
			_, err := r.ForFlexDrivers("/root/pod-drivers").CommandContext(context.Background(), tc.execPath, "mount", "/dir", "{}").CombinedOutput()
			ran = append(ran, pods.calls...)
			if tc.notExist {
				tc.wantErr = fs.ErrNotExist
			}
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) || len(ran) != 0 {
					t.Fatalf("ran %v, err %v; want %v", ran, err, tc.wantErr)
				}
				return
			}
			if err != nil || len(ran) != 1 || ran[0] != tc.want {
				t.Fatalf("ran %v, err %v; want %q", ran, err, tc.want)
			}
		})
	}
}

func TestFlexNodePreference(t *testing.T) {
	cases := map[string]struct {
		args []string
		want []string
	}{
		"attach prefers its node":     {[]string{"attach", "{}", "node-a"}, []string{"node-a"}},
		"isattached prefers its node": {[]string{"isattached", "{}", "node-b"}, []string{"node-b"}},
		"detach prefers its node":     {[]string{"detach", "vol", "node-c"}, []string{"node-c"}},
		"init: no preference":         {[]string{"init"}, nil},
		"getvolumename: none":         {[]string{"getvolumename", "{}"}, nil},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			f := &fakeFinder{pods: map[string]mountpod.Target{"nodeplug.io/attach": {Name: "mp"}}}
			r := NewRouter(f, &fakePods{}, &testingexec.FakeExec{}, Options{})
			if _, err := r.ForFlexDrivers().Command("/d/nodeplug.io~attach/attach", tc.args...).Output(); err != nil {
				t.Fatal(err)
			}
			if strings.Join(f.preferred, ",") != strings.Join(tc.want, ",") {
				t.Fatalf("preferred %v, want %v", f.preferred, tc.want)
			}
		})
	}
}

func TestPodCmd(t *testing.T) {
	mp := mountpod.Target{Name: "mp"}
	newCmd := func(p *fakePods) utilexec.Cmd {
		r := NewRouter(&fakeFinder{pods: map[string]mountpod.Target{localPlugin: mp}}, p, &testingexec.FakeExec{}, Options{})
		return r.ForPlugin(localPlugin).Command("fsck", "-a", "/dev/x")
	}
	t.Run("exit code preserved", func(t *testing.T) {
		out, err := newCmd(&fakePods{code: 8}).CombinedOutput()
		var ee utilexec.ExitError
		if !errors.As(err, &ee) || ee.ExitStatus() != 8 || string(out) != "outerr" {
			t.Fatalf("out %q err %v", out, err)
		}
	})
	t.Run("output is stdout only", func(t *testing.T) {
		out, err := newCmd(&fakePods{}).Output()
		if err != nil || string(out) != "out" {
			t.Fatalf("out %q err %v", out, err)
		}
	})
	t.Run("writers, start and wait", func(t *testing.T) {
		c := newCmd(&fakePods{})
		var o, e bytes.Buffer
		c.SetStdout(&o)
		c.SetStderr(&e)
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		if err := c.Wait(); err != nil || o.String() != "out" || e.String() != "err" {
			t.Fatalf("stdout %q stderr %q err %v", o.String(), e.String(), err)
		}
	})
	t.Run("stop ends a hanging command", func(t *testing.T) {
		c := newCmd(&fakePods{delay: time.Hour})
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		c.Stop()
		if err := c.Wait(); !errors.Is(err, context.Canceled) {
			t.Fatalf("err %v", err)
		}
	})
	unsupported := map[string]func(utilexec.Cmd){
		"stdin":       func(c utilexec.Cmd) { c.SetStdin(strings.NewReader("y")) },
		"environment": func(c utilexec.Cmd) { c.SetEnv([]string{"A=1"}) },
		"working dir": func(c utilexec.Cmd) { c.SetDir("/tmp") },
	}
	for name, set := range unsupported {
		t.Run("unsupported "+name, func(t *testing.T) {
			p := &fakePods{}
			c := newCmd(p)
			set(c)
			if err := c.Run(); !errors.Is(err, ErrUnsupported) || len(p.calls) != 0 {
				t.Fatalf("err %v calls %v; want ErrUnsupported and nothing run", err, p.calls)
			}
		})
	}
	t.Run("pipes unsupported", func(t *testing.T) {
		if _, err := newCmd(&fakePods{}).StdoutPipe(); !errors.Is(err, ErrUnsupported) {
			t.Fatalf("err %v", err)
		}
	})
	t.Run("context deadline bounds the timeout", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		if got := timeoutFor(ctx, time.Hour); got > 50*time.Millisecond {
			t.Fatalf("timeout %v", got)
		}
	})
}
