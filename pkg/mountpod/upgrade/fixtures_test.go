package upgrade

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/klog/v2/ktesting"

	"github.com/nodeplug/nodeplug/pkg/mountpod"
)

// The fixtures: DaemonSet kube-mount/mount-utilities (uid ds-uid) with
// revisions oldhash and newhash (the current one), node node-a, the old
// mount pod (Ready) that deleting replaces with the new one (Ready at
// once), PVC default/disk bound to the local PV local-pv-1 and
// default/nfs-claim to an NFS PV. Cases change them in setup.
const (
	testNS  = "kube-mount"
	nodeA   = "node-a"
	oldName = "mount-utilities-old01"
	newName = "mount-utilities-new01"
	image1  = "docker.io/nodeplug/mount-utilities:1"
	image2  = "docker.io/nodeplug/mount-utilities:2"
)

var (
	tolerateAll  = []v1.Toleration{{Operator: v1.TolerationOpExists}}
	tolerateKey  = []v1.Toleration{{Key: TaintKey, Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute}}
	tolerateSome = []v1.Toleration{{Operator: v1.TolerationOpExists, TolerationSeconds: ptr(int64(5))}}
	fuseVol      = []v1.Volume{{Name: "data", VolumeSource: v1.VolumeSource{FlexVolume: &v1.FlexVolumeSource{Driver: "nodeplug.io/fuse"}}}}
	pvcVol       = []v1.Volume{{Name: "disk", VolumeSource: v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: "disk"}}}}
	otherVols    = []v1.Volume{
		{Name: "cache", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}},
		{Name: "x", VolumeSource: v1.VolumeSource{FlexVolume: &v1.FlexVolumeSource{Driver: "other.io/x"}}},
		{Name: "tmp", VolumeSource: v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: "nfs-claim"}}},
	}
	taintOld = []v1.Taint{{Key: TaintKey, Value: oldName, Effect: v1.TaintEffectNoExecute}}
)

func ptr[T any](v T) *T { return &v }

func daemonSet(strategy appsv1.DaemonSetUpdateStrategyType, tol []v1.Toleration) *appsv1.DaemonSet {
	return &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: "mount-utilities", Namespace: testNS, UID: "ds-uid", Generation: 2},
		Spec: appsv1.DaemonSetSpec{
			Selector:       &metav1.LabelSelector{MatchLabels: map[string]string{"app": "mount-utilities"}},
			UpdateStrategy: appsv1.DaemonSetUpdateStrategy{Type: strategy},
			Template: v1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "mount-utilities"}},
				Spec: v1.PodSpec{Tolerations: tol}},
		},
		Status: appsv1.DaemonSetStatus{ObservedGeneration: 2},
	}
}

func revision(name, hash, ownerUID string, rev int64) *appsv1.ControllerRevision {
	return &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: testNS,
		Labels:          map[string]string{"app": "mount-utilities", appsv1.DefaultDaemonSetUniqueLabelKey: hash},
		OwnerReferences: []metav1.OwnerReference{{Kind: "DaemonSet", UID: types.UID(ownerUID)}}}, Revision: rev}
}

func node(taints []v1.Taint, inUse []v1.UniqueVolumeName, attached []v1.AttachedVolume) *v1.Node {
	return &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: nodeA}, Spec: v1.NodeSpec{Taints: taints},
		Status: v1.NodeStatus{VolumesInUse: inUse, VolumesAttached: attached}}
}

func mountPodObj(name, hash, image string, ready bool) *v1.Pod {
	cond := v1.ConditionFalse
	if ready {
		cond = v1.ConditionTrue
	}
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: testNS, UID: types.UID("uid-" + name),
			Labels: map[string]string{"app": "mount-utilities", appsv1.DefaultDaemonSetUniqueLabelKey: hash,
				"mount.kubernetes.io/local-volume": "true", "flexvolume.mount.kubernetes.io/nodeplug.io_2ffuse": "true",
				"mount.kubernetes.io/nfs": "false"},
			OwnerReferences: []metav1.OwnerReference{{Kind: "DaemonSet", Name: "mount-utilities", UID: "ds-uid", Controller: ptr(true)}}},
		Spec: v1.PodSpec{NodeName: nodeA, Tolerations: tolerateAll, Containers: []v1.Container{{Name: "utilities", Image: image}}},
		Status: v1.PodStatus{Phase: v1.PodRunning, Conditions: []v1.PodCondition{{Type: v1.PodReady, Status: cond}},
			ContainerStatuses: []v1.ContainerStatus{{Name: "utilities", ContainerID: "containerd://c-" + name,
				State: v1.ContainerState{Running: &v1.ContainerStateRunning{}}}}},
	}
}

func consumer(nsName string, vols []v1.Volume, tol []v1.Toleration) *v1.Pod {
	ns, name, _ := strings.Cut(nsName, "/")
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, UID: types.UID("uid-" + name)},
		Spec:   v1.PodSpec{NodeName: nodeA, Volumes: vols, Tolerations: tol, Containers: []v1.Container{{Name: "c", Image: "busybox"}}},
		Status: v1.PodStatus{Phase: v1.PodRunning}}
}

// world is the fake cluster of one case, with its hooks.
type world struct {
	client *fake.Clientset
	exec   *fakeExec
	clock  *fakeClock

	mutations []string
	// evictAfter: the evictAfter-th list of the node's pods after the taint
	// runs evict. readyAfter: the readyAfter-th list of the mount pods after
	// the delete makes the new pod Ready.
	evictAfter, evictLeft int
	evict                 func(w *world)
	newPod                *v1.Pod
	readyAfter, readyLeft int
	// failures["verb resource"] fails that many such calls (-1: all) with
	// an internal error; the calls that fail are not recorded.
	failures map[string]int
	// keep["verb resource"] answers such calls without doing them.
	keep   map[string]bool
	cancel context.CancelFunc
}

func newWorld() *world {
	w := &world{failures: map[string]int{}, keep: map[string]bool{}, exec: &fakeExec{}, clock: &fakeClock{now: time.Unix(1_800_000_000, 0)}}
	w.client = fake.NewClientset(
		daemonSet(appsv1.OnDeleteDaemonSetStrategyType, tolerateAll),
		revision("mount-utilities-oldhash", "oldhash", "ds-uid", 1),
		revision("mount-utilities-newhash", "newhash", "ds-uid", 2),
		revision("other-zzz", "zzz", "other-uid", 9),
		node(nil, nil, nil),
		mountPodObj(oldName, "oldhash", image1, true),
		&v1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "disk", Namespace: "default"}, Spec: v1.PersistentVolumeClaimSpec{VolumeName: "local-pv-1"}},
		&v1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "nfs-claim", Namespace: "default"}, Spec: v1.PersistentVolumeClaimSpec{VolumeName: "nfs-pv"}},
		&v1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "local-pv-1"}, Spec: v1.PersistentVolumeSpec{PersistentVolumeSource: v1.PersistentVolumeSource{Local: &v1.LocalVolumeSource{Path: "/mnt/disks/1"}}}},
		&v1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "nfs-pv"}, Spec: v1.PersistentVolumeSpec{PersistentVolumeSource: v1.PersistentVolumeSource{NFS: &v1.NFSVolumeSource{Server: "s", Path: "/"}}}},
	)
	w.newPod = mountPodObj(newName, "newhash", image2, true)
	w.client.PrependReactor("*", "*", w.react)
	return w
}

// react records the mutating calls and runs the hooks; the tracker then
// does the call.
func (w *world) react(a k8stesting.Action) (bool, runtime.Object, error) {
	res := a.GetResource().Resource
	key := a.GetVerb() + " " + res
	if n := w.failures[key]; n != 0 {
		w.failures[key] = n - 1
		return true, nil, apierrors.NewInternalError(errors.New("etcd is down"))
	}
	if w.keep[key] {
		return true, nil, nil
	}
	switch {
	case a.GetVerb() == "update" && res == "nodes":
		n := a.(k8stesting.UpdateAction).GetObject().(*v1.Node)
		w.mutations = append(w.mutations, taintMutation(n))
		if strings.HasPrefix(w.mutations[len(w.mutations)-1], "taint ") {
			w.evictLeft = w.evictAfter
		}
	case a.GetVerb() == "delete" && res == "pods":
		w.mutations = append(w.mutations, "delete pod "+a.(k8stesting.DeleteAction).GetName())
		if w.newPod != nil {
			w.add(w.newPod)
			w.readyLeft = w.readyAfter
		}
	case a.GetVerb() == "list" && res == "pods" && a.GetNamespace() == "":
		if w.evictLeft > 0 {
			if w.evictLeft--; w.evictLeft == 0 && w.evict != nil {
				w.evict(w)
			}
		}
	case a.GetVerb() == "list" && res == "pods" && a.GetNamespace() == testNS:
		if w.readyLeft > 0 {
			if w.readyLeft--; w.readyLeft == 0 {
				w.setReady(newName, true)
			}
		}
	case a.GetVerb() != "get" && a.GetVerb() != "list":
		w.mutations = append(w.mutations, a.GetVerb()+" "+res)
	}
	return false, nil, nil
}

func taintMutation(n *v1.Node) string {
	for _, t := range n.Spec.Taints {
		if t.Key == TaintKey {
			return fmt.Sprintf("taint %s %s=%s:%s", n.Name, t.Key, t.Value, t.Effect)
		}
	}
	return "untaint " + n.Name
}

func (w *world) add(objs ...runtime.Object) {
	for _, o := range objs {
		if err := w.client.Tracker().Add(o); err != nil {
			panic(err)
		}
	}
}

func (w *world) update(o runtime.Object, ns string) {
	gvr := v1.SchemeGroupVersion.WithResource("pods")
	if _, ok := o.(*v1.Node); ok {
		gvr = v1.SchemeGroupVersion.WithResource("nodes")
	}
	if _, ok := o.(*appsv1.DaemonSet); ok {
		gvr = appsv1.SchemeGroupVersion.WithResource("daemonsets")
	}
	if err := w.client.Tracker().Update(gvr, o, ns); err != nil {
		panic(err)
	}
}

func (w *world) remove(resource, ns, name string) {
	if err := w.client.Tracker().Delete(v1.SchemeGroupVersion.WithResource(resource), ns, name); err != nil {
		panic(err)
	}
}

func (w *world) pod(ns, name string) *v1.Pod {
	o, err := w.client.Tracker().Get(v1.SchemeGroupVersion.WithResource("pods"), ns, name)
	if err != nil {
		return nil
	}
	return o.(*v1.Pod)
}

func (w *world) setReady(name string, ready bool) {
	p := w.pod(testNS, name)
	p.Status.Conditions = mountPodObj(name, "", "", ready).Status.Conditions
	w.update(p, testNS)
}

// setVolumes sets the node's volumes in use and attached, keeping its
// taints.
func (w *world) setVolumes(inUse []v1.UniqueVolumeName, attached []v1.AttachedVolume) {
	o, _ := w.client.Tracker().Get(v1.SchemeGroupVersion.WithResource("nodes"), "", nodeA)
	n := o.(*v1.Node)
	n.Status.VolumesInUse, n.Status.VolumesAttached = inUse, attached
	w.update(n, "")
}

func (w *world) taints() []string {
	o, _ := w.client.Tracker().Get(v1.SchemeGroupVersion.WithResource("nodes"), "", nodeA)
	var out []string
	for _, t := range o.(*v1.Node).Spec.Taints {
		out = append(out, fmt.Sprintf("%s=%s:%s", t.Key, t.Value, t.Effect))
	}
	return out
}

// fakeExec answers the FUSE probe: a root and a kubelet-root mount, the
// host's FUSE mounts, the pod's own (gone after unmountAfter calls), the
// marker and the descriptors (gone with the own mounts).
type fakeExec struct {
	host, own, fds []string
	unmountAfter   int
	err            error // returned from the failFrom-th call on (0: every call)
	failFrom       int
	empty          bool
	calls          []mountpod.Target
}

func (e *fakeExec) ExecInPod(_ context.Context, t mountpod.Target, argv []string, _ time.Duration) ([]byte, []byte, error) {
	e.calls = append(e.calls, t)
	if len(argv) != 3 || argv[0] != "sh" || argv[2] != fuseProbe {
		return nil, nil, fmt.Errorf("unexpected command %q", argv)
	}
	if e.err != nil && len(e.calls) >= e.failFrom {
		return nil, []byte("command terminated\n"), e.err
	}
	if e.empty {
		return nil, nil, nil
	}
	if e.unmountAfter > 0 {
		if e.unmountAfter--; e.unmountAfter == 0 {
			e.own, e.fds = nil, nil
		}
	}
	var b bytes.Buffer
	b.WriteString("22 1 0:21 / / rw,relatime - overlay overlay rw\n")
	b.WriteString("30 22 8:1 /var/lib/kubelet /var/lib/kubelet rw,relatime shared:1 - ext4 /dev/sda1 rw\n")
	for _, l := range append(append(append([]string{}, e.host...), e.own...), fdsMarker) {
		b.WriteString(l + "\n")
	}
	for _, l := range e.fds {
		b.WriteString(l + "\n")
	}
	return b.Bytes(), nil, nil
}

// fakeClock advances only when slept on.
type fakeClock struct {
	now    time.Time
	sleeps int
}

func (c *fakeClock) Now() time.Time { return c.now }

func (c *fakeClock) Sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if c.sleeps++; c.sleeps > 10_000 {
		return errors.New("fake clock: more than 10000 sleeps")
	}
	c.now = c.now.Add(d)
	return nil
}

// run is one run of the upgrader in a case, and what it must give.
type run struct {
	before    func(w *world)
	cfg       func(c *Config)
	nodes     []string
	code      int
	mutations []string // of this run
	out       []string // substrings of stdout and stderr
	notOut    []string
	after     func(t *testing.T, w *world)
}

type upgradeCase struct {
	name  string
	setup func(w *world)
	runs  []run
}

func runCases(t *testing.T, cases []upgradeCase) {
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			ctx, cancel := context.WithCancel(ctx)
			defer cancel()
			w := newWorld()
			w.cancel = cancel
			if tc.setup != nil {
				tc.setup(w)
			}
			for i, r := range tc.runs {
				w.runOnce(ctx, t, i, r)
			}
		})
	}
}

func (w *world) runOnce(ctx context.Context, t *testing.T, i int, r run) {
	t.Helper()
	if r.before != nil {
		r.before(w)
	}
	cfg := Config{Namespace: testNS, DaemonSet: "mount-utilities", Timeout: 300 * time.Second, PollInterval: 50 * time.Millisecond}
	if r.cfg != nil {
		r.cfg(&cfg)
	}
	nodes := r.nodes
	if nodes == nil {
		nodes = []string{nodeA}
	}
	w.mutations = nil
	var out, errOut bytes.Buffer
	code := New(w.client, w.exec, cfg, w.clock, &out, &errOut).Run(ctx, nodes)
	all := out.String() + errOut.String()
	if code != r.code {
		t.Errorf("run %d: exit %d, want %d\n%s", i, code, r.code, all)
	}
	if got, want := strings.Join(w.mutations, "\n"), strings.Join(r.mutations, "\n"); got != want {
		t.Errorf("run %d: mutations:\n%s\nwant:\n%s\noutput:\n%s", i, got, want, all)
	}
	for _, s := range r.out {
		if !strings.Contains(all, s) && !regexpMatch(s, all) {
			t.Errorf("run %d: output does not contain %q:\n%s", i, s, all)
		}
	}
	for _, s := range r.notOut {
		if strings.Contains(all, s) {
			t.Errorf("run %d: output contains %q:\n%s", i, s, all)
		}
	}
	if r.after != nil {
		r.after(t, w)
	}
}

// regexpMatch matches s as a multi-line regular expression when it starts
// with "(?m)".
func regexpMatch(s, text string) bool {
	return strings.HasPrefix(s, "(?m)") && regexp.MustCompile(s).MatchString(text)
}

func secondsDuration(s int) time.Duration { return time.Duration(s) * time.Second }
