package upgrade

import (
	"context"
	"fmt"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/klog/v2"

	"github.com/nodeplug/nodeplug/pkg/flexvolume/podreplay"
)

type useKind int

const (
	usePod useKind = iota
	useFuse
	useNodeInUse
	useNodeAttached
)

// use is one thing that still uses a served volume.
type use struct {
	kind useKind
	// pod: who is "namespace/name", what the volume, plugin its plugin;
	// fuse: what is the mount point; node: what is the unique volume name.
	who, what, plugin string
	tolerates         bool // a pod that tolerates the taint for ever
}

// volumes holds the claims and PVs a scan reads, to find a claim's PV.
type volumes struct {
	pvcs map[string]*v1.PersistentVolumeClaim // by namespace/name
	pvs  map[string]*v1.PersistentVolume
}

func (vs volumes) boundPV(namespace, claim string) *v1.PersistentVolume {
	if pvc := vs.pvcs[namespace+"/"+claim]; pvc != nil && pvc.Spec.VolumeName != "" {
		return vs.pvs[pvc.Spec.VolumeName]
	}
	return nil
}

// scanInUse sets inUse to what still uses a volume of the served plugins:
// pods on the node (outside the mount namespace, not finished), the node's
// status, and the FUSE mounts the old pod serves.
func (r *nodeRun) scanInUse(ctx context.Context) error {
	pods, err := r.client.CoreV1().Pods("").List(ctx, metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("spec.nodeName", r.node).String()})
	if err != nil {
		return fmt.Errorf("listing the pods on node %s: %w", r.node, err)
	}
	node, err := r.client.CoreV1().Nodes().Get(ctx, r.node, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("reading node %s: %w", r.node, err)
	}
	users := r.consumers(pods.Items)
	vs, err := r.readVolumes(ctx, users)
	if err != nil {
		return err
	}
	r.inUse = nil
	logger := klog.FromContext(ctx)
	value := taintValueFor(r.old)
	for _, pod := range users {
		tol := toleratesForever(logger, pod.Spec.Tolerations, value)
		for _, vol := range pod.Spec.Volumes {
			if what, plugin := r.servedVolume(pod, vol, vs); plugin != "" {
				r.inUse = append(r.inUse, use{kind: usePod, who: pod.Namespace + "/" + pod.Name, what: what, plugin: plugin, tolerates: tol})
			}
		}
	}
	r.inUse = append(r.inUse, r.nodeUses(node)...)
	return r.scanFuseMounts(ctx)
}

// consumers returns the pods on the node outside the mount namespace that
// have not finished.
func (r *nodeRun) consumers(pods []v1.Pod) []*v1.Pod {
	var out []*v1.Pod
	for i := range pods {
		p := &pods[i]
		if p.Namespace != r.cfg.Namespace && p.Spec.NodeName == r.node &&
			p.Status.Phase != v1.PodSucceeded && p.Status.Phase != v1.PodFailed {
			out = append(out, p)
		}
	}
	return out
}

// readVolumes lists the claims and PVs, if any pod has a claim.
func (r *nodeRun) readVolumes(ctx context.Context, pods []*v1.Pod) (volumes, error) {
	vs := volumes{pvcs: map[string]*v1.PersistentVolumeClaim{}, pvs: map[string]*v1.PersistentVolume{}}
	if !slices.ContainsFunc(pods, func(p *v1.Pod) bool {
		return slices.ContainsFunc(p.Spec.Volumes, func(v v1.Volume) bool { return v.PersistentVolumeClaim != nil || v.Ephemeral != nil })
	}) {
		return vs, nil
	}
	pvcs, err := r.client.CoreV1().PersistentVolumeClaims("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return vs, fmt.Errorf("listing PersistentVolumeClaims: %w", err)
	}
	pvs, err := r.client.CoreV1().PersistentVolumes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return vs, fmt.Errorf("listing PersistentVolumes: %w", err)
	}
	for i := range pvcs.Items {
		vs.pvcs[pvcs.Items[i].Namespace+"/"+pvcs.Items[i].Name] = &pvcs.Items[i]
	}
	for i := range pvs.Items {
		vs.pvs[pvs.Items[i].Name] = &pvs.Items[i]
	}
	return vs, nil
}

// servedVolume returns how to name vol of pod and the served plugin it
// uses, or "" for none. Whether it uses a served flexvolume driver, inline
// or through its claim's PV, is podreplay's rule (the one the
// controller-manager replays pods by); a generic ephemeral volume is its
// claim "<pod>-<volume>".
func (r *nodeRun) servedVolume(pod *v1.Pod, vol v1.Volume, vs volumes) (string, string) {
	claim := ""
	switch {
	case vol.PersistentVolumeClaim != nil:
		claim = vol.PersistentVolumeClaim.ClaimName
	case vol.Ephemeral != nil:
		claim = pod.Name + "-" + vol.Name
		vol = v1.Volume{Name: vol.Name, VolumeSource: v1.VolumeSource{
			PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}}
	}
	one := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: pod.Namespace}, Spec: v1.PodSpec{Volumes: []v1.Volume{vol}}}
	if claim == "" {
		if podreplay.UsesFlexDriversVia(r.flex, vs.boundPV)(one) {
			return vol.Name, vol.FlexVolume.Driver
		}
		return vol.Name, r.served(inlineInTree(vol.VolumeSource))
	}
	pv := vs.boundPV(pod.Namespace, claim)
	if pv == nil {
		return "", ""
	}
	what := fmt.Sprintf("%s (claim %s, PV %s)", vol.Name, claim, pv.Name)
	if podreplay.UsesFlexDriversVia(r.flex, vs.boundPV)(one) {
		return what, pv.Spec.FlexVolume.Driver
	}
	return what, r.served(pvInTree(pv.Spec.PersistentVolumeSource))
}

func (r *nodeRun) served(intree string) string {
	if intree != "" && slices.Contains(r.intree, intree) {
		return intree
	}
	return ""
}

func inlineInTree(src v1.VolumeSource) string {
	switch {
	case src.NFS != nil:
		return pluginNFS
	case src.ISCSI != nil:
		return pluginISCSI
	case src.FC != nil:
		return pluginFC
	}
	return ""
}

func pvInTree(src v1.PersistentVolumeSource) string {
	switch {
	case src.Local != nil:
		return pluginLocal
	case src.NFS != nil:
		return pluginNFS
	case src.ISCSI != nil:
		return pluginISCSI
	case src.FC != nil:
		return pluginFC
	}
	return ""
}

// nodeUses returns the node's volumes in use and attached whose unique
// name is of a served plugin ("flexvolume-<driver>/...", "<plugin>/...").
func (r *nodeRun) nodeUses(node *v1.Node) []use {
	var prefixes []string
	for _, d := range r.flex {
		prefixes = append(prefixes, "flexvolume-"+d+"/")
	}
	for _, p := range r.intree {
		prefixes = append(prefixes, p+"/")
	}
	served := func(name string) bool {
		return slices.ContainsFunc(prefixes, func(p string) bool { return strings.HasPrefix(name, p) })
	}
	var out []use
	for _, v := range node.Status.VolumesInUse {
		if served(string(v)) {
			out = append(out, use{kind: useNodeInUse, what: string(v)})
		}
	}
	for _, v := range node.Status.VolumesAttached {
		if served(string(v.Name)) {
			out = append(out, use{kind: useNodeAttached, what: string(v.Name)})
		}
	}
	return out
}

// describe returns inUse for people, one indented line each (only the pods
// that tolerate the taint with onlyTolerating).
func (r *nodeRun) describe(onlyTolerating bool) []string {
	var lines []string
	for _, u := range r.inUse {
		switch {
		case u.kind == usePod && u.tolerates:
			lines = append(lines, fmt.Sprintf("  pod %s: volume %s of %s (tolerates the taint: not evicted)", u.who, u.what, u.plugin))
		case onlyTolerating:
		case u.kind == usePod:
			lines = append(lines, fmt.Sprintf("  pod %s: volume %s of %s", u.who, u.what, u.plugin))
		case u.kind == useFuse:
			lines = append(lines, fmt.Sprintf("  pod %s/%s: FUSE mount %s (its daemon runs in that pod)", r.cfg.Namespace, r.old.Name, u.what))
		case u.kind == useNodeInUse:
			lines = append(lines, fmt.Sprintf("  node %s: %s in use (status.volumesInUse)", r.node, u.what))
		case u.kind == useNodeAttached:
			lines = append(lines, fmt.Sprintf("  node %s: %s attached (status.volumesAttached)", r.node, u.what))
		}
	}
	return lines
}

func (r *nodeRun) hasToleratingUser() bool {
	return slices.ContainsFunc(r.inUse, func(u use) bool { return u.kind == usePod && u.tolerates })
}

// refuse ends the run with exit 3, untainting the node if this run or an
// earlier one tainted it.
func (r *nodeRun) refuse(ctx context.Context) error {
	fmt.Fprintf(r.err, "[%s] REFUSED: never delete a mount pod while a volume it serves is mounted: a FUSE daemon dies with its pod, and every consumer's data path with it.\n", r.node)
	fmt.Fprintf(r.err, "[%s] these pods tolerate the taint %s:%s, so they are not evicted, and use volumes that %s serves:\n",
		r.node, TaintKey, TaintEffect, r.old.Name)
	r.lines(true, r.describe(true))
	r.untaintAfterFailure(ctx, "nothing was changed")
	return fail(ExitRefused, "stop those pods (or drop their toleration), then run the command again", "%s was not deleted", r.old.Name)
}
