package pvstate

import (
	"context"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	coreclient "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/nodeplug/nodeplug/pkg/localpv/identity"
	"github.com/nodeplug/nodeplug/pkg/localpv/jobs"
)

// stampLayout is the layout of the times the marks carry.
const stampLayout = "2006-01-02T15:04:05Z"

// Stamp formats a mark's time.
func Stamp(t time.Time) string { return t.UTC().Format(stampLayout) }

// Transition is one named change of a PV's marks.
type Transition struct {
	// Name names the transition in errors and logs.
	Name string
	// apply changes a copy of the PV, with now as the time of a new mark,
	// and reports whether anything changed.
	apply func(pv *v1.PersistentVolume, now time.Time) bool
}

// Writer applies transitions to the master's PVs. It is safe for
// concurrent use.
type Writer interface {
	// Apply writes a transition to a PV. It returns the PV as written and
	// true, or the given PV and false when the PV already is in the state
	// the transition leads to (nothing is written then).
	Apply(ctx context.Context, pv *v1.PersistentVolume, t Transition) (*v1.PersistentVolume, bool, error)
}

type writer struct {
	client coreclient.PersistentVolumesGetter
	clock  clock.PassiveClock
}

// New returns the Writer over a PV client.
func New(client coreclient.PersistentVolumesGetter, clk clock.PassiveClock) Writer {
	if clk == nil {
		clk = clock.RealClock{}
	}
	return &writer{client: client, clock: clk}
}

func (w *writer) Apply(ctx context.Context, pv *v1.PersistentVolume, t Transition) (*v1.PersistentVolume, bool, error) {
	cp, changed := t.Preview(pv, w.clock.Now())
	if !changed {
		return pv, false, nil
	}
	written, err := w.client.PersistentVolumes().Update(ctx, cp, metav1.UpdateOptions{})
	if err != nil {
		return pv, false, fmt.Errorf("failed to %s PV %s: %w", t.Name, pv.Name, err)
	}
	klog.FromContext(ctx).V(2).Info("Changed the state of a PV", "pv", pv.Name, "transition", t.Name)
	return written, true, nil
}

// Preview returns a copy of a PV with the transition applied at now, and
// whether it differs from the PV.
func (t Transition) Preview(pv *v1.PersistentVolume, now time.Time) (*v1.PersistentVolume, bool) {
	cp := pv.DeepCopy()
	if cp.Annotations == nil {
		cp.Annotations = map[string]string{}
	}
	if cp.Labels == nil {
		cp.Labels = map[string]string{}
	}
	if !t.apply(cp, now) {
		return pv, false
	}
	return cp, true
}

// mark is a transition that sets an annotation to the time of the change
// (and a selecting label to "true"), unless the annotation is there.
func mark(name, ann, label string) Transition {
	return Transition{Name: name, apply: func(pv *v1.PersistentVolume, now time.Time) bool {
		if _, ok := pv.Annotations[ann]; ok {
			return false
		}
		pv.Annotations[ann] = Stamp(now)
		if label != "" {
			pv.Labels[label] = "true"
		}
		return true
	}}
}

// unmark is a transition that removes an annotation and its label.
func unmark(name, ann, label string) Transition {
	return Transition{Name: name, apply: func(pv *v1.PersistentVolume, _ time.Time) bool {
		_, hasAnn := pv.Annotations[ann]
		_, hasLabel := pv.Labels[label]
		delete(pv.Annotations, ann)
		if label != "" {
			delete(pv.Labels, label)
		}
		return hasAnn || (label != "" && hasLabel)
	}}
}

// The transitions of the marks.
var (
	// MarkMissing: a used PV whose disk discovery did not find.
	MarkMissing = mark("mark missing", jobs.AnnVolumeMissing, "")
	// ClearMissing: its disk is back.
	ClearMissing = unmark("clear the missing mark of", jobs.AnnVolumeMissing, "")
	// MarkMachineReplaced: a used PV of a machine its node name no longer
	// runs on.
	MarkMachineReplaced = mark("mark machine-replaced", jobs.AnnMachineReplaced, jobs.LabelMachineReplaced)
	// ClearMachineReplaced: its machine runs under the node name again.
	ClearMachineReplaced = unmark("clear the machine-replaced mark of", jobs.AnnMachineReplaced, jobs.LabelMachineReplaced)
	// ClearNodeGone: the PV's Node is back on the PV's machine.
	ClearNodeGone = unmark("clear the node-gone mark of", jobs.AnnNodeGone, "")
)

// MarkDiskReplaced: a used PV whose path leads to another disk, found.
// The time of the first mark is kept; the disk found is updated.
func MarkDiskReplaced(found identity.ID) Transition {
	marked := mark("", jobs.AnnDiskReplaced, jobs.LabelDiskReplaced).apply
	return Transition{Name: "mark disk-replaced", apply: func(pv *v1.PersistentVolume, now time.Time) bool {
		changed := marked(pv, now)
		return set(pv.Annotations, jobs.AnnDiskFound, string(found)) || changed
	}}
}

// ClearDiskReplaced: its disk is at its path again.
var ClearDiskReplaced = Transition{Name: "clear the disk-replaced mark of", apply: func(pv *v1.PersistentVolume, now time.Time) bool {
	_, found := pv.Annotations[jobs.AnnDiskFound]
	delete(pv.Annotations, jobs.AnnDiskFound)
	return unmark("", jobs.AnnDiskReplaced, jobs.LabelDiskReplaced).apply(pv, now) || found
}}

// MarkNodeGone: a bound PV whose Node was deleted at since and did not
// come back, before its claim is released.
func MarkNodeGone(since time.Time) Transition {
	return Transition{Name: "mark node-gone", apply: func(pv *v1.PersistentVolume, _ time.Time) bool {
		return set(pv.Annotations, jobs.AnnNodeGone, Stamp(since))
	}}
}

// StampDisk records the identity of a PV's disk on a PV that records none.
// A PV that records another identity is left as it is: a recorded disk is
// never overwritten.
func StampDisk(id identity.ID) Transition {
	return Transition{Name: "record the disk of", apply: func(pv *v1.PersistentVolume, _ time.Time) bool {
		if id == "" || pv.Annotations[jobs.AnnDiskID] != "" {
			return false
		}
		pv.Annotations[jobs.AnnDiskID] = string(id)
		return true
	}}
}

// RefineDisk records a newer form of the identity a PV records (a bare file
// handle, an NVMe controller's serial, a WWN without its serial), of the
// same disk; any other recorded identity is left as it is.
func RefineDisk(id identity.ID) Transition {
	return Transition{Name: "refine the disk of", apply: func(pv *v1.PersistentVolume, _ time.Time) bool {
		old := identity.ID(pv.Annotations[jobs.AnnDiskID])
		if id == "" || old == id || !identity.Refines(old, id) {
			return false
		}
		pv.Annotations[jobs.AnnDiskID] = string(id)
		return true
	}}
}

// RecordMachine records the machine of a PV that records none.
func RecordMachine(machineID, systemUUID string) Transition {
	return Transition{Name: "record the machine of", apply: func(pv *v1.PersistentVolume, _ time.Time) bool {
		return setMachine(pv, machineID, systemUUID)
	}}
}

// AdoptMachine hands a PV of a replaced machine to the machine its node
// name runs on now, whose path proved to lead to the PV's disk: the machine
// is replaced and the machine-replaced mark cleared.
func AdoptMachine(machineID, systemUUID string) Transition {
	clear := ClearMachineReplaced.apply
	return Transition{Name: "hand to the new machine", apply: func(pv *v1.PersistentVolume, now time.Time) bool {
		changed := setMachine(pv, machineID, systemUUID)
		return clear(pv, now) || changed
	}}
}

func setMachine(pv *v1.PersistentVolume, machineID, systemUUID string) bool {
	changed := false
	for k, v := range map[string]string{jobs.AnnMachineID: machineID, jobs.AnnSystemUUID: systemUUID} {
		if v == "" {
			_, had := pv.Annotations[k]
			delete(pv.Annotations, k)
			changed = changed || had
			continue
		}
		changed = set(pv.Annotations, k, v) || changed
	}
	return changed
}

func set(m map[string]string, k, v string) bool {
	if old, ok := m[k]; ok && old == v {
		return false
	}
	m[k] = v
	return true
}
