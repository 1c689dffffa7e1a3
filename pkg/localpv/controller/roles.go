package controller

import (
	"time"

	batchv1 "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"

	"github.com/nodeplug/nodeplug/pkg/localpv/controller/blockedclaims"
	"github.com/nodeplug/nodeplug/pkg/localpv/controller/cleanupjobs"
	"github.com/nodeplug/nodeplug/pkg/localpv/controller/discoveryjobs"
	"github.com/nodeplug/nodeplug/pkg/localpv/controller/inventory"
	"github.com/nodeplug/nodeplug/pkg/localpv/controller/machine"
	"github.com/nodeplug/nodeplug/pkg/localpv/controller/publishing"
	"github.com/nodeplug/nodeplug/pkg/localpv/controller/pvops"
	"github.com/nodeplug/nodeplug/pkg/localpv/controller/pvstate"
)

// wireRoles builds the master's role packages over its caches, clients and
// queue. Roles share only the pvops executor, the pvstate writer of PV
// marks and the machine.Identity value: they ask for work through the queue, or through what is handed to
// them here (discovery hands accepted reports to the controller, which
// records their inventory and publishes them).
func (c *controller) wireRoles(inf Informers) {
	opts := c.opts
	c.ops = pvops.New(c.kube, c.recorder, opts.Clock)
	c.marks = pvstate.New(c.kube.CoreV1(), opts.Clock)
	c.inventory = inventory.New(opts.Notifications, opts.Clock)
	policy := blockedclaims.Config{PVs: markedPVs{c}, Owns: c.owns, Claims: c.kube.CoreV1(),
		PolicyClient: c.kube.AdmissionregistrationV1(), PolicyName: opts.AdmissionPolicyName, Recorder: c.recorder}
	if inf.AdmissionPolicies != nil { // nil under ReplacedMachineWarn: nothing is blocked
		policy.Policies = inf.AdmissionPolicies.Lister()
	}
	c.policy = blockedclaims.New(policy)
	c.machines = machine.New(machine.Config{PVs: nodePVs(c.pvsOnNode), Marks: c.marks, Ops: c.ops,
		Recorder: c.recorder, BlockPods: opts.ReplacedMachinePolicy == ReplacedMachineBlockPods,
		MarksChanged: func() { c.queue.Add(blockedClaimsKey) }})
	c.discovery = discoveryjobs.New(discoveryjobs.Config{Provisioner: c.cfg, Params: opts.Jobs, Client: c.kube.BatchV1(),
		Jobs: c.jobLister, Pods: c.jobPods, Recorder: c.recorder, Clock: opts.Clock, QPS: opts.DiscoveryQPS,
		Burst: opts.DiscoveryBurst, RetryBase: opts.RetryBase, RetryMax: opts.RetryMax, HeldPaths: c.heldPaths,
		Requeue: func(node string, after time.Duration) { c.queue.AddAfter(nodeKey(node), after) }, Consumer: c})
	c.cleanup = cleanupjobs.New(cleanupjobs.Config{Provisioner: c.cfg, Params: opts.Jobs, Kube: c.kube,
		Volumes: volumes{c}, Nodes: c.nodeLister, Pods: c.jobPods, Ops: c.ops, Marks: c.marks, Unwiped: c.unwiped,
		Recorder: c.recorder, Clock: opts.Clock, RetryBase: opts.RetryBase, RetryMax: opts.RetryMax,
		RequestDiscovery: c.requestDiscovery,
		Requeue:          func(id string, after time.Duration) { c.queue.AddAfter(volKey(id), after) }})
	c.publisher = publishing.New(publishing.Config{Provisioner: c.cfg,
		ProvisionerName: opts.ProvisionerName, OwnerName: c.ownerName(), Kube: c.kube, State: state{c},
		Classes: c.scLister, Ops: c.ops, Marks: c.marks, Unwiped: c.unwiped, Recorder: c.recorder, Clock: opts.Clock,
		MarksChanged: func() { c.queue.Add(blockedClaimsKey) }, VolumeChanged: func(id string) { c.queue.Add(volKey(id)) }})
}

// nodePVs finds the master's PVs of a node name for the machine checker.
type nodePVs func(node string) ([]*v1.PersistentVolume, error)

func (f nodePVs) OnNode(node string) ([]*v1.PersistentVolume, error) { return f(node) }

// volumes finds a volume's PV and cleanup Jobs for the cleanup role.
type volumes struct{ c *controller }

func (v volumes) PV(id string) (*v1.PersistentVolume, error) { return v.c.managedPV(id) }

func (v volumes) Jobs(id string) ([]*batchv1.Job, error) { return v.c.cleanupJobs(id) }

// state is what the caches say, for publishing.
type state struct{ c *controller }

func (s state) PVsOnNode(node string) ([]*v1.PersistentVolume, error) { return s.c.pvsOnNode(node) }

func (s state) PVsAt(node, path string) ([]*v1.PersistentVolume, error) { return s.c.pvsAt(node, path) }

func (s state) ManagedPV(id string) (*v1.PersistentVolume, error) { return s.c.managedPV(id) }

func (s state) PathTaken(node, hostname, path string) (bool, error) {
	return s.c.pathTaken(node, hostname, path)
}

func (s state) PathLocked(node, path string) (bool, error) { return s.c.pathLocked(node, path) }

func (s state) CleanupLocked(id string) (bool, error) { return s.c.cleanupLocked(id) }

func (s state) CleanupJobs(id string) ([]*batchv1.Job, error) { return s.c.cleanupJobs(id) }

// markedPVs finds the marked PVs and a node's PVs for the policy writer.
type markedPVs struct{ c *controller }

func (m markedPVs) Marked() ([]*v1.PersistentVolume, error) { return m.c.byIndex(indexMarked, "true") }

func (m markedPVs) OnNode(node string) ([]*v1.PersistentVolume, error) {
	return m.c.byIndex(indexNode, node)
}
