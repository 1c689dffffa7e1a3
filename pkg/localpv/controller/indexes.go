package controller

import (
	"fmt"
	"slices"
	"sort"

	batchv1 "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/nodeplug/nodeplug/pkg/localpv/jobs"
)

const (
	indexVolume   = "volume"
	indexNode     = "node"
	indexHostPath = "hostPath"
	// indexNodePath maps node name and host path to the master's PVs (of
	// every machine that ran under the name) and to cleanup Jobs.
	indexNodePath = "nodePath"
	// indexHostname maps a hostname to every local PV pinned to it,
	// whoever published it.
	indexHostname = "hostname"
	// indexMarked holds, under "true", the managed PVs labelled
	// machine-replaced or disk-replaced: those whose claims are blocked.
	indexMarked = "marked"
)

var pvIndexers = cache.Indexers{
	indexVolume: func(obj interface{}) ([]string, error) {
		if pv, ok := obj.(*v1.PersistentVolume); ok && managed(pv) && pv.Labels[jobs.LabelVolumeID] != "" {
			return []string{pv.Labels[jobs.LabelVolumeID]}, nil
		}
		return nil, nil
	},
	indexNode: func(obj interface{}) ([]string, error) {
		if pv, ok := obj.(*v1.PersistentVolume); ok && managed(pv) && pv.Annotations[jobs.AnnNode] != "" {
			return []string{pv.Annotations[jobs.AnnNode]}, nil
		}
		return nil, nil
	},
	indexNodePath: func(obj interface{}) ([]string, error) {
		if pv, ok := obj.(*v1.PersistentVolume); ok && managed(pv) && pv.Annotations[jobs.AnnNode] != "" {
			return []string{hostPathKey(pv.Annotations[jobs.AnnNode], pv.Annotations[jobs.AnnHostPath])}, nil
		}
		return nil, nil
	},
	// indexHostPath covers every local PV, managed or not, so that a volume
	// already published by someone else (the upstream provisioner during a
	// migration) is never published twice.
	indexHostPath: func(obj interface{}) ([]string, error) {
		pv, ok := obj.(*v1.PersistentVolume)
		if !ok || pv.Spec.Local == nil {
			return nil, nil
		}
		var out []string
		for _, h := range hostnames(pv) {
			out = append(out, hostPathKey(h, pv.Spec.Local.Path))
		}
		return out, nil
	},
	indexMarked: func(obj interface{}) ([]string, error) {
		if pv, ok := obj.(*v1.PersistentVolume); ok && managed(pv) &&
			(pv.Labels[jobs.LabelMachineReplaced] == "true" || pv.Labels[jobs.LabelDiskReplaced] == "true") {
			return []string{"true"}, nil
		}
		return nil, nil
	},
	indexHostname: func(obj interface{}) ([]string, error) {
		pv, ok := obj.(*v1.PersistentVolume)
		if !ok || pv.Spec.Local == nil {
			return nil, nil
		}
		return hostnames(pv), nil
	},
}

var jobIndexers = cache.Indexers{
	indexVolume: func(obj interface{}) ([]string, error) {
		if j, ok := obj.(*batchv1.Job); ok && j.Labels[jobs.LabelRole] == jobs.RoleCleanup && j.Labels[jobs.LabelVolumeID] != "" {
			return []string{j.Labels[jobs.LabelVolumeID]}, nil
		}
		return nil, nil
	},
	indexNodePath: func(obj interface{}) ([]string, error) {
		if j, ok := obj.(*batchv1.Job); ok && j.Labels[jobs.LabelRole] == jobs.RoleCleanup && j.Annotations[jobs.AnnNode] != "" {
			return []string{hostPathKey(j.Annotations[jobs.AnnNode], j.Annotations[jobs.AnnHostPath])}, nil
		}
		return nil, nil
	},
}

func hostPathKey(hostname, path string) string { return hostname + "\x00" + path }

// hostnames returns the values of the hostname terms of a PV's node affinity.
func hostnames(pv *v1.PersistentVolume) []string {
	if pv.Spec.NodeAffinity == nil || pv.Spec.NodeAffinity.Required == nil {
		return nil
	}
	var out []string
	for _, t := range pv.Spec.NodeAffinity.Required.NodeSelectorTerms {
		for _, e := range t.MatchExpressions {
			if e.Key == v1.LabelHostname && e.Operator == v1.NodeSelectorOpIn {
				out = append(out, e.Values...)
			}
		}
	}
	return out
}

// managed reports whether a PV carries the provisioners' managed-by label:
// it is this master's or another installation's.
func managed(pv *v1.PersistentVolume) bool {
	return pv.Labels[jobs.LabelManagedBy] == jobs.ManagedByValue
}

// owns reports whether a PV is this master's: managed, provisioned by its
// provisioner name, of a class no other installation claimed. Another
// installation's PVs are never acted on.
func (c *controller) owns(pv *v1.PersistentVolume) bool {
	return managed(pv) && pv.Annotations[jobs.AnnProvisionedBy] == c.opts.ProvisionerName &&
		!c.classOwnedElsewhere(pv.Annotations[jobs.AnnClass])
}

// ownedByIndex returns the master's own PVs under one index value.
func (c *controller) ownedByIndex(index, value string) ([]*v1.PersistentVolume, error) {
	pvs, err := c.byIndex(index, value)
	if err != nil {
		return nil, err
	}
	return slices.DeleteFunc(pvs, func(pv *v1.PersistentVolume) bool { return !c.owns(pv) }), nil
}

// managedPV returns the master's PV of a volume, or nil.
func (c *controller) managedPV(id string) (*v1.PersistentVolume, error) {
	pvs, err := c.ownedByIndex(indexVolume, id)
	if err != nil || len(pvs) == 0 {
		return nil, err
	}
	return pvs[0], nil
}

func (c *controller) pvsOnNode(node string) ([]*v1.PersistentVolume, error) {
	return c.ownedByIndex(indexNode, node)
}

// pathTaken reports whether a local PV other than the master's PVs of this
// node name already points at the path on a node with this hostname.
func (c *controller) pathTaken(node, hostname, path string) (bool, error) {
	objs, err := c.pvIndexer.ByIndex(indexHostPath, hostPathKey(hostname, path))
	if err != nil {
		return false, fmt.Errorf("failed to look up PVs of path %s: %w", path, err)
	}
	for _, o := range objs {
		if pv := o.(*v1.PersistentVolume); !c.owns(pv) || pv.Annotations[jobs.AnnNode] != node {
			return true, nil
		}
	}
	return false, nil
}

// pvsAt returns the master's PVs of a path on a node name, of any machine.
func (c *controller) pvsAt(node, path string) ([]*v1.PersistentVolume, error) {
	return c.ownedByIndex(indexNodePath, hostPathKey(node, path))
}

// heldPaths returns the paths of the node's local PVs that discovery does
// not report as volumes: other provisioners' and installations' PVs, and the
// master's own PVs of classes no longer configured. Discovery resolves them,
// so that a disk behind any PV is never published a second time.
func (c *controller) heldPaths(node *v1.Node) []string {
	hostname := node.Labels[v1.LabelHostname]
	if hostname == "" {
		return nil
	}
	objs, err := c.pvIndexer.ByIndex(indexHostname, hostname)
	if err != nil {
		return nil
	}
	seen := map[string]bool{}
	var out []string
	for _, o := range objs {
		pv := o.(*v1.PersistentVolume)
		if _, configured := c.cfg.StorageClassMap[pv.Annotations[jobs.AnnClass]]; c.owns(pv) && configured {
			continue
		}
		if p := pv.Spec.Local.Path; !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	sort.Strings(out)
	return out
}

// pathLocked reports whether a path of a node name has a cleanup Job the
// master has not released yet, whichever machine's PV it wipes: the Job
// runs on the machine that has the name now. A succeeded Job locks too,
// until the master has acted on it (deleted the PV, forgotten the disk as
// unwiped) and deleted it: a lock released at success would let a
// discovery report, handled in between, find the disk still remembered.
func (c *controller) pathLocked(node, path string) (bool, error) {
	objs, err := c.jobIndexer.ByIndex(indexNodePath, hostPathKey(node, path))
	if err != nil {
		return true, fmt.Errorf("failed to look up cleanup Jobs of path %s: %w", path, err)
	}
	for _, o := range objs {
		if locks(o.(*batchv1.Job)) {
			return true, nil
		}
	}
	return false, nil
}

// locks reports whether a cleanup Job still locks its volume and path: it
// does until the master deletes it, which it does only once it has acted
// on the Job's result.
func locks(j *batchv1.Job) bool { return j.DeletionTimestamp == nil }

// cleanupJobs returns a volume's cleanup Jobs, oldest attempt first.
func (c *controller) cleanupJobs(id string) ([]*batchv1.Job, error) {
	objs, err := c.jobIndexer.ByIndex(indexVolume, id)
	if err != nil {
		return nil, fmt.Errorf("failed to look up cleanup Jobs of volume %s: %w", id, err)
	}
	out := make([]*batchv1.Job, 0, len(objs))
	for _, o := range objs {
		out = append(out, o.(*batchv1.Job))
	}
	sort.Slice(out, func(i, j int) bool { return jobs.Attempt(out[i]) < jobs.Attempt(out[j]) })
	return out, nil
}

// cleanupLocked reports whether a volume has a cleanup Job the master has
// not released: pending, running, failed, or succeeded and not acted on
// yet. Such a volume must not get a PV.
func (c *controller) cleanupLocked(id string) (bool, error) {
	js, err := c.cleanupJobs(id)
	if err != nil {
		return true, err
	}
	for _, j := range js {
		if locks(j) {
			return true, nil
		}
	}
	return false, nil
}

// byIndex returns the PVs under one index value, whoever's they are.
func (c *controller) byIndex(index, value string) ([]*v1.PersistentVolume, error) {
	objs, err := c.pvIndexer.ByIndex(index, value)
	if err != nil {
		return nil, fmt.Errorf("failed to look up PVs by %s: %w", index, err)
	}
	out := make([]*v1.PersistentVolume, 0, len(objs))
	for _, o := range objs {
		out = append(out, o.(*v1.PersistentVolume))
	}
	return out, nil
}
