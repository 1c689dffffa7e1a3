package machine

import (
	"fmt"

	v1 "k8s.io/api/core/v1"

	"github.com/nodeplug/nodeplug/pkg/localpv/jobs"
)

// Identity is the identity of the machine behind a node name, as the Node's
// status reports it: the kubelet reads it from the machine (DMI product
// UUID, /etc/machine-id), so a new machine under a reused name reports
// another.
type Identity struct{ ID, UUID string }

// Of returns the identity a Node reports.
func Of(node *v1.Node) Identity {
	return Identity{ID: node.Status.NodeInfo.MachineID, UUID: node.Status.NodeInfo.SystemUUID}
}

// Recorded returns the identity a PV was published or adopted for.
func Recorded(pv *v1.PersistentVolume) Identity {
	return Identity{ID: pv.Annotations[jobs.AnnMachineID], UUID: pv.Annotations[jobs.AnnSystemUUID]}
}

// Known reports whether any field is known.
func (m Identity) Known() bool { return m.ID != "" || m.UUID != "" }

// Differs reports whether two identities are of different machines: a
// field that both know differs. An unknown field proves nothing.
func (m Identity) Differs(o Identity) bool {
	return (m.ID != "" && o.ID != "" && m.ID != o.ID) || (m.UUID != "" && o.UUID != "" && m.UUID != o.UUID)
}

func (m Identity) String() string {
	return fmt.Sprintf("machineID %q, systemUUID %q", m.ID, m.UUID)
}

// Set writes an identity into a PV's annotations, replacing the one there;
// an empty field is not written.
func Set(pv *v1.PersistentVolume, m Identity) {
	if pv.Annotations == nil {
		pv.Annotations = map[string]string{}
	}
	delete(pv.Annotations, jobs.AnnMachineID)
	delete(pv.Annotations, jobs.AnnSystemUUID)
	if m.ID != "" {
		pv.Annotations[jobs.AnnMachineID] = m.ID
	}
	if m.UUID != "" {
		pv.Annotations[jobs.AnnSystemUUID] = m.UUID
	}
}

// Marked reports whether a PV carries the machine-replaced mark.
func Marked(pv *v1.PersistentVolume) bool {
	_, ok := pv.Annotations[jobs.AnnMachineReplaced]
	return ok
}
