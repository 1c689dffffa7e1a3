package podexec

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"testing"
	"time"

	utilexec "k8s.io/utils/exec"

	"github.com/nodeplug/nodeplug/pkg/mountpod"
)

// TestResolveRule: the one rule that decides pod or host, case by case,
// each with a single lookup.
func TestResolveRule(t *testing.T) {
	mp := mountpod.Target{Name: "mp", Container: "c"}
	served := map[string]mountpod.Target{localPlugin: mp, "nodeplug.io/fuse": mp}
	disabled := &mountpod.NoPodError{Plugin: localPlugin, Disabled: errors.New("no API client")}
	notRunning := errors.New(`container "c" of mount pod kube-mount/mp is not running`)
	const hostDriver, podDriver = "/flex/nodeplug.io~fuse/fuse", "/pods/nodeplug.io~fuse/fuse"
	cases := map[string]struct {
		pods    map[string]mountpod.Target
		err     error // of the finder
		req     Request
		hostHas []string
		wantPod bool
		wantErr []any // errors.Is values, or **mountpod.NoPodError for one naming the label
	}{
		"pod serves: pod, though the host has it": {pods: served, hostHas: []string{"mkfs.ext4"},
			req: Request{Plugin: localPlugin, Executable: "mkfs.ext4"}, wantPod: true},
		"no pod, host has it: host": {hostHas: []string{"mkfs.ext4"},
			req: Request{Plugin: localPlugin, Executable: "mkfs.ext4"}},
		"no pod, host lacks it: error naming the label": {
			req:     Request{Plugin: localPlugin, Executable: "mkfs.ext4"},
			wantErr: []any{utilexec.ErrExecutableNotFound, new(*mountpod.NoPodError)}},
		"mount pods disabled, host has it: host": {err: disabled, hostHas: []string{"mkfs.ext4"},
			req: Request{Plugin: localPlugin, Executable: "mkfs.ext4"}},
		"pod not ready (none qualifies), host lacks it: error": {
			req:     Request{Plugin: "nodeplug.io/fuse", Executable: "mount.fuse"},
			wantErr: []any{utilexec.ErrExecutableNotFound}},
		"cache not synced, utility: error, no guess": {err: mountpod.ErrNotSynced, hostHas: []string{"mkfs.ext4"},
			req: Request{Plugin: localPlugin, Executable: "mkfs.ext4"}, wantErr: []any{mountpod.ErrNotSynced}},
		"cache not synced, driver installed on the host: host": {err: mountpod.ErrNotSynced, hostHas: []string{hostDriver},
			req: Request{Plugin: "nodeplug.io/fuse", Executable: hostDriver, Driver: true}},
		"cache not synced, driver gone from the host: error": {err: mountpod.ErrNotSynced,
			req:     Request{Plugin: "nodeplug.io/fuse", Executable: hostDriver, Driver: true},
			wantErr: []any{utilexec.ErrExecutableNotFound, mountpod.ErrNotSynced}},
		"cache not synced, driver only pods have: error": {err: mountpod.ErrNotSynced, hostHas: []string{podDriver},
			req: Request{Plugin: "nodeplug.io/fuse", Executable: podDriver, Driver: true, PodsOnly: true}, wantErr: []any{mountpod.ErrNotSynced}},
		"no pod, driver only pods have: error, never the placeholder": {hostHas: []string{podDriver},
			req:     Request{Plugin: "nodeplug.io/fuse", Executable: podDriver, Driver: true, PodsOnly: true},
			wantErr: []any{fs.ErrNotExist, utilexec.ErrExecutableNotFound, new(*mountpod.NoPodError)}},
		"pod's container not running: error, not the host": {err: notRunning, hostHas: []string{"mkfs.ext4"},
			req: Request{Plugin: localPlugin, Executable: "mkfs.ext4"}, wantErr: []any{notRunning}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			f := &fakeFinder{pods: tc.pods, err: tc.err}
			r := NewRouter(f, &fakePods{}, hostExec(new([]string)), Options{LookPath: lookPath(tc.hostHas...)})
			rt, err := r.Resolve(tc.req)
			if f.lookups != 1 {
				t.Errorf("%d lookups, want 1", f.lookups)
			}
			if tc.wantErr != nil {
				if err == nil {
					t.Fatalf("resolved to %v, want an error", rt)
				}
				for _, want := range tc.wantErr {
					switch want := want.(type) {
					case **mountpod.NoPodError:
						if !errors.As(err, want) || !strings.Contains(err.Error(), "=true") {
							t.Errorf("error %v is no NoPodError naming the label", err)
						}
					case error:
						if !errors.Is(err, want) {
							t.Errorf("error %v is not %v", err, want)
						}
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got, inPod := rt.Pod(); inPod != tc.wantPod || (inPod && got != mp) {
				t.Fatalf("resolved to %v, want pod %v", rt, tc.wantPod)
			}
		})
	}
}

// switchingFinder answers with a different pod, or none, at each lookup:
// what a rollout or a deleted pod looks like between two lookups.
type switchingFinder struct {
	answers []error // nil: pod "mp<i>"
	lookups int
}

func (f *switchingFinder) FindPreferring(plugin, _ string) (mountpod.Target, error) {
	i := min(f.lookups, len(f.answers)-1)
	f.lookups++
	if f.answers[i] != nil {
		return mountpod.Target{}, f.answers[i]
	}
	return mountpod.Target{Name: fmt.Sprintf("mp%d", i)}, nil
}

// TestRouteKeepsItsTarget: every command of a resolved operation runs
// where it was resolved, whatever the pod cache says meanwhile, and the
// cache is not asked again.
func TestRouteKeepsItsTarget(t *testing.T) {
	noPod := &mountpod.NoPodError{Plugin: localPlugin}
	cases := map[string]struct {
		answers []error
		want    []string
	}{
		"pod, then another pod": {answers: []error{nil, nil}, want: []string{"mp0:mount /dev/x /t", "mp0:umount /t"}},
		"pod, then none":        {answers: []error{nil, noPod}, want: []string{"mp0:mount /dev/x /t", "mp0:umount /t"}},
		"none, then a pod":      {answers: []error{noPod, nil}, want: []string{"host:mount /dev/x /t", "host:umount /t"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			f := &switchingFinder{answers: tc.answers}
			var ran []string
			pods := &fakePods{}
			r := NewRouter(f, pods, hostExec(&ran), Options{LookPath: lookPath("mount", "umount")})
			rt, err := r.Resolve(Request{Plugin: localPlugin, Executable: "mount"})
			if err != nil {
				t.Fatal(err)
			}
			for _, argv := range [][]string{{"mount", "/dev/x", "/t"}, {"umount", "/t"}} {
				if _, err := rt.Command(argv[0], argv[1:]...).CombinedOutput(); err != nil {
					t.Fatal(err)
				}
			}
			ran = append(ran, pods.calls...)
			if strings.Join(ran, ",") != strings.Join(tc.want, ",") || f.lookups != 1 {
				t.Fatalf("ran %v with %d lookups, want %v with 1", ran, f.lookups, tc.want)
			}
		})
	}
}

// gonePods fails every exec as the CRI executor does for a pod whose
// container is gone.
type gonePods struct{ calls int }

func (p *gonePods) ExecInPod(_ context.Context, t mountpod.Target, _ []string, _ time.Duration) ([]byte, []byte, error) {
	p.calls++
	return nil, nil, fmt.Errorf("%w: mount pod %s", ErrPodGone, t)
}

// TestPodGoneAfterResolve: a pod that goes away between the resolve and
// the exec fails the command with ErrPodGone; it does not run on the host.
func TestPodGoneAfterResolve(t *testing.T) {
	for name, run := range map[string]func(r *Router) error{
		"utility": func(r *Router) error {
			_, err := r.ForPlugin(localPlugin).Command("mkfs.ext4", "/dev/x").CombinedOutput()
			return err
		},
		"flex driver": func(r *Router) error {
			_, err := r.ForFlexDrivers().Command("/flex/kubernetes.io~local-volume/local-volume", "mount", "/t", "{}").CombinedOutput()
			return err
		},
	} {
		t.Run(name, func(t *testing.T) {
			var ran []string
			pods := &gonePods{}
			r := NewRouter(&fakeFinder{pods: map[string]mountpod.Target{localPlugin: {Name: "mp"}}}, pods, hostExec(&ran),
				Options{LookPath: lookPath("mkfs.ext4", "/flex/kubernetes.io~local-volume/local-volume")})
			if err := run(r); !errors.Is(err, ErrPodGone) || pods.calls != 1 || len(ran) != 0 {
				t.Fatalf("err %v, %d pod calls, host ran %v; want ErrPodGone, 1 pod call, nothing on the host", err, pods.calls, ran)
			}
		})
	}
}

// TestWithRoute: a driver call whose context carries a Route of its
// plugin runs there without a lookup; the host rule still holds for a
// driver only pods have, and a route of another plugin is ignored.
func TestWithRoute(t *testing.T) {
	const drv = "nodeplug.io/fuse"
	mp := mountpod.Target{Name: "mp"}
	cases := map[string]struct {
		pinServed   bool   // the pin resolves to pod mp (else the host)
		pinPlugin   string // the pin's plugin
		execPath    string
		want        string
		wantLookups int
		wantErr     error
	}{
		"pinned pod: runs there, no lookup": {pinServed: true, pinPlugin: drv, execPath: "/flex/nodeplug.io~fuse/fuse",
			want: "mp:" + mountpod.FlexDriverDir + "/nodeplug.io~fuse/fuse mount /t {}"},
		"pinned host: the host driver": {pinPlugin: drv, execPath: "/flex/nodeplug.io~fuse/fuse",
			want: "host:/flex/nodeplug.io~fuse/fuse mount /t {}"},
		"pinned host, driver only pods have: error": {pinPlugin: drv, execPath: "/pods/nodeplug.io~fuse/fuse", wantErr: fs.ErrNotExist},
		"route of another plugin: resolved again": {pinServed: true, pinPlugin: localPlugin, execPath: "/flex/nodeplug.io~fuse/fuse",
			want: "host:/flex/nodeplug.io~fuse/fuse mount /t {}", wantLookups: 1},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var ran []string
			pods := &fakePods{}
			pinFinder := &fakeFinder{}
			if tc.pinServed {
				pinFinder.pods = map[string]mountpod.Target{tc.pinPlugin: mp}
			}
			opts := Options{LookPath: lookPath("umount", "/flex/nodeplug.io~fuse/fuse", "/pods/nodeplug.io~fuse/fuse")}
			r := NewRouter(pinFinder, pods, hostExec(&ran), opts)
			pin, err := r.Resolve(Request{Plugin: tc.pinPlugin, Executable: "umount"})
			if err != nil {
				t.Fatal(err)
			}
			pinFinder.lookups, pinFinder.pods = 0, nil // later lookups find no pod
			_, err = r.ForFlexDrivers("/pods").CommandContext(WithRoute(context.Background(), pin), tc.execPath, "mount", "/t", "{}").CombinedOutput()
			ran = append(ran, pods.calls...)
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) || len(ran) != 0 {
					t.Fatalf("err %v, ran %v; want %v and nothing run", err, ran, tc.wantErr)
				}
				return
			}
			if err != nil || len(ran) != 1 || ran[0] != tc.want || pinFinder.lookups != tc.wantLookups {
				t.Fatalf("ran %v with %d lookups, err %v; want %q with %d", ran, pinFinder.lookups, err, tc.want, tc.wantLookups)
			}
		})
	}
}
