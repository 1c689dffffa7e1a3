package publishing

import (
	"context"

	batchv1 "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	storagelisters "k8s.io/client-go/listers/storage/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"

	"github.com/nodeplug/nodeplug/pkg/localpv/config"
	"github.com/nodeplug/nodeplug/pkg/localpv/controller/pvops"
	"github.com/nodeplug/nodeplug/pkg/localpv/controller/pvstate"
	"github.com/nodeplug/nodeplug/pkg/localpv/report"
	"github.com/nodeplug/nodeplug/pkg/localpv/unwiped"
	"github.com/nodeplug/nodeplug/pkg/localpv/validation"
)

// Publisher publishes the volumes of accepted discovery reports.
type Publisher interface {
	// Publish creates the PVs of a report's accepted volumes and handles
	// the node's PVs whose volumes were not reported. held is what the
	// paths of the node's other local PVs lead to. An error means the
	// report is to be consumed again; publishing is idempotent.
	Publish(ctx context.Context, node *v1.Node, res *validation.Result, held []report.Held) error
	// Forget drops what is remembered of a node that is gone: the
	// identities its last report had.
	Forget(node string)
}

// State is what the master's caches say of its PVs and cleanup Jobs.
type State interface {
	// PVsOnNode returns the master's PVs of a node name, of every machine.
	PVsOnNode(node string) ([]*v1.PersistentVolume, error)
	// PVsAt returns the master's PVs of a path on a node name.
	PVsAt(node, path string) ([]*v1.PersistentVolume, error)
	// ManagedPV returns the master's PV of a volume, or nil.
	ManagedPV(id string) (*v1.PersistentVolume, error)
	// PathTaken reports whether a local PV other than the master's PVs of
	// this node name points at the path on a node with this hostname.
	PathTaken(node, hostname, path string) (bool, error)
	// PathLocked reports whether a path of a node name has a cleanup Job
	// that has not succeeded.
	PathLocked(node, path string) (bool, error)
	// CleanupLocked reports whether a volume has a cleanup Job that has
	// not succeeded.
	CleanupLocked(id string) (bool, error)
	// CleanupJobs returns a volume's cleanup Jobs, oldest attempt first.
	CleanupJobs(id string) ([]*batchv1.Job, error)
}

// Config is what a Publisher reads, writes and tells.
type Config struct {
	// Provisioner is the parsed ConfigMap.
	Provisioner *config.Configuration
	// ProvisionerName goes into pv.kubernetes.io/provisioned-by; OwnerName
	// ("<namespace>/<provisioner name>") into the StorageClasses' owner
	// annotation.
	ProvisionerName, OwnerName string
	Kube                       kubernetes.Interface
	State                      State
	Classes                    storagelisters.StorageClassLister
	Ops                        pvops.Interface
	// Marks writes the marks of the master's PVs.
	Marks    pvstate.Writer
	Unwiped  unwiped.Store
	Recorder record.EventRecorder
	Clock    clock.PassiveClock
	// MarksChanged is called after a PV was marked or unmarked
	// disk-replaced or handed to another machine, so that the blocked
	// claims are written again; VolumeChanged asks for a volume's cleanup
	// to be synced.
	MarksChanged  func()
	VolumeChanged func(id string)
}

type publisher struct {
	Config
	reported *reported
}

var _ Publisher = &publisher{}

// New returns a Publisher.
func New(cfg Config) Publisher { return &publisher{Config: cfg, reported: newReported()} }

func (p *publisher) Forget(node string) { p.reported.forget(node) }
