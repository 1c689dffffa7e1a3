package mountpod

import (
	"errors"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"
)

const root = "/var/lib/kubelet"

// withRootMount mounts hostPath hp at mountPath in the container at index
// i, with propagation mode (nil: none given).
func withRootMount(i int, hp, mountPath string, mode *v1.MountPropagationMode) podOpt {
	return func(p *v1.Pod) {
		p.Spec.Volumes = append(p.Spec.Volumes, v1.Volume{Name: "root",
			VolumeSource: v1.VolumeSource{HostPath: &v1.HostPathVolumeSource{Path: hp}}})
		c := &p.Spec.Containers[i]
		c.VolumeMounts = append(c.VolumeMounts, v1.VolumeMount{Name: "root", MountPath: mountPath, MountPropagation: mode})
	}
}

func mode(m v1.MountPropagationMode) *v1.MountPropagationMode { return &m }

func TestCheckPropagation(t *testing.T) {
	bidi := mode(v1.MountPropagationBidirectional)
	cases := map[string]struct {
		pod     *v1.Pod
		wantErr string // "" for ok
	}{
		"root at the same path, Bidirectional":     {pod: mountPod("a", withRootMount(0, root, root, bidi))},
		"a parent of root, Bidirectional":          {pod: mountPod("a", withRootMount(0, "/var/lib", "/var/lib", bidi))},
		"trailing slash is the same path":          {pod: mountPod("a", withRootMount(0, root+"/", root, bidi))},
		"no propagation given (None, the default)": {pod: mountPod("a", withRootMount(0, root, root, nil)), wantErr: "propagation None"},
		"HostToContainer only":                     {pod: mountPod("a", withRootMount(0, root, root, mode(v1.MountPropagationHostToContainer))), wantErr: "propagation HostToContainer"},
		"another path in the container":            {pod: mountPod("a", withRootMount(0, root, "/host/kubelet", bidi)), wantErr: "mounted at /host/kubelet"},
		"a directory below root":                   {pod: mountPod("a", withRootMount(0, root+"/plugins", root+"/plugins", bidi)), wantErr: "does not mount the kubelet root dir"},
		"no root mount at all":                     {pod: mountPod("a"), wantErr: "does not mount the kubelet root dir"},
		"only the other container mounts it":       {pod: mountPod("a", withRootMount(1, root, root, bidi)), wantErr: `container "utilities"`},
		"annotation picks the container that mounts it": {
			pod: mountPod("a", withRootMount(1, root, root, bidi), annotate(ContainerAnnotation, "sidecar"))},
		"annotation names no container": {pod: mountPod("a", annotate(ContainerAnnotation, "nope")), wantErr: `no container "nope"`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			err := CheckPropagation(tc.pod, root)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("unexpected error: %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("err %v, want one containing %q", err, tc.wantErr)
			case tc.wantErr != "" && !strings.Contains(tc.wantErr, "no container") && !strings.Contains(err.Error(), "mountPropagation: Bidirectional"):
				t.Fatalf("err %v does not name the fix", err)
			}
		})
	}
}

// TestFindRequiresPropagation: with RequirePropagation, a labelled pod
// without the Bidirectional root mount serves nothing; an older bad pod
// does not hide a newer good one.
func TestFindRequiresPropagation(t *testing.T) {
	good := withRootMount(0, root, root, mode(v1.MountPropagationBidirectional))
	cases := map[string]struct {
		pods []*v1.Pod
		want string // container ID, "" for NoPodError
	}{
		"good pod serves":               {pods: []*v1.Pod{mountPod("a", good)}, want: "c-a"},
		"pod without propagation":       {pods: []*v1.Pod{mountPod("a", withRootMount(0, root, root, nil))}},
		"older bad pod, newer good pod": {pods: []*v1.Pod{mountPod("old", created(1)), mountPod("new", created(2), good)}, want: "c-new"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			f := finderWith(t, tc.pods...)
			f.RequirePropagation(root)
			got, err := f.Find(local)
			var noPod *NoPodError
			switch {
			case tc.want == "" && !errors.As(err, &noPod):
				t.Fatalf("got %v, %v; want NoPodError", got, err)
			case tc.want != "" && (err != nil || got.ContainerID != tc.want):
				t.Fatalf("got %v, %v; want %s", got, err, tc.want)
			}
			if tc.want == "" && tc.pods[0].Spec.Volumes != nil && !strings.Contains(err.Error(), "kube-mount/a carry the label but do not mount") {
				t.Fatalf("the error does not name the misconfigured pod: %v", err)
			}
			if served := f.Served(); (tc.want == "") != (len(served) == 0) {
				t.Fatalf("Served() = %v", served)
			}
		})
	}
}

// TestMisconfigReporter: one Warning Event per bad pod and spec, the gauge
// follows fixes and deletions, unlabelled pods are ignored.
func TestMisconfigReporter(t *testing.T) {
	rec := record.NewFakeRecorder(10)
	r := NewMisconfigReporter(root, rec)
	bad := mountPod("bad", withRootMount(0, root, root, nil))
	plain := mountPod("plain")
	delete(plain.Labels, "mount.kubernetes.io/local-volume")

	r.OnAdd(bad, false)
	r.OnUpdate(bad, bad) // a status update: no second event
	r.OnAdd(plain, false)
	if n := r.Misconfigured(); n != 1 {
		t.Fatalf("misconfigured %d, want 1", n)
	}
	select {
	case e := <-rec.Events:
		if !strings.HasPrefix(e, "Warning "+ReasonMisconfigured) || !strings.Contains(e, "Bidirectional") {
			t.Fatalf("event %q", e)
		}
	default:
		t.Fatal("no event")
	}
	if len(rec.Events) != 0 {
		t.Fatalf("%d more events, want none", len(rec.Events))
	}
	fixed := mountPod("bad", withRootMount(0, root, root, mode(v1.MountPropagationBidirectional)))
	r.OnUpdate(bad, fixed)
	if n := r.Misconfigured(); n != 0 {
		t.Fatalf("after the fix: misconfigured %d, want 0", n)
	}
	r.OnAdd(bad, false)
	r.OnDelete(bad)
	if n := r.Misconfigured(); n != 0 {
		t.Fatalf("after delete: misconfigured %d, want 0", n)
	}
}
