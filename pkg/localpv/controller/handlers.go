package controller

import (
	"fmt"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	batchv1 "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/nodeplug/localpv-api/localpv/v1alpha1"
	"github.com/nodeplug/nodeplug/pkg/localpv/controller/machine"
	"github.com/nodeplug/nodeplug/pkg/localpv/jobs"
)

// registration is an event handler of the master on one informer.
type registration struct {
	name string
	inf  cache.SharedIndexInformer
	h    cache.ResourceEventHandler
}

func (c *controller) addHandlers(logger klog.Logger, inf Informers) error {
	regs := []registration{
		{"nodes", inf.Nodes.Informer(), cache.ResourceEventHandlerFuncs{
			AddFunc:    func(obj interface{}) { c.onNode(nil, obj) },
			UpdateFunc: c.onNode,
			DeleteFunc: func(obj interface{}) { c.onNodeDelete(obj) },
		}},
		{"persistentvolumes", inf.PVs.Informer(), cache.ResourceEventHandlerFuncs{
			AddFunc: func(obj interface{}) {
				c.onPV(obj)
				c.missing.count(nil, obj)
			},
			UpdateFunc: func(old, obj interface{}) {
				c.onPV(obj)
				c.onMarkedPV(old)
				c.missing.count(old, obj)
			},
			DeleteFunc: func(obj interface{}) {
				c.onPV(obj)
				c.missing.count(obj, nil)
			},
		}},
		{"jobs", inf.Jobs.Informer(), cache.ResourceEventHandlerFuncs{
			AddFunc:    c.onJob,
			UpdateFunc: func(_, obj interface{}) { c.onJob(obj) },
			DeleteFunc: c.onJobDelete,
		}},
		{"pods", inf.Pods.Informer(), cache.ResourceEventHandlerFuncs{
			UpdateFunc: func(_, obj interface{}) { c.onPod(obj) },
		}},
		{"nodediskstates", inf.Notifications, cache.ResourceEventHandlerFuncs{
			AddFunc:    c.onNotification,
			UpdateFunc: func(_, obj interface{}) { c.onNotification(obj) },
		}},
	}
	if inf.AdmissionPolicies != nil {
		regs = append(regs, registration{"validatingadmissionpolicies", inf.AdmissionPolicies.Informer(), cache.ResourceEventHandlerFuncs{
			AddFunc:    c.onPolicy,
			UpdateFunc: func(_, obj interface{}) { c.onPolicy(obj) },
			DeleteFunc: c.onPolicy,
		}})
	}
	for _, r := range regs {
		if _, err := r.inf.AddEventHandlerWithOptions(r.h, cache.HandlerOptions{Logger: &logger}); err != nil {
			return fmt.Errorf("failed to watch %s: %w", r.name, err)
		}
	}
	return nil
}

// onNode requests discovery for a new node, and for a node that starts to
// match the node selector, gets a new hostname label or runs on another
// machine (its PVs' machines are checked before discovery runs).
func (c *controller) onNode(oldObj, obj interface{}) {
	node, ok := obj.(*v1.Node)
	if !ok {
		return
	}
	if old, ok := oldObj.(*v1.Node); ok {
		if c.cfg.NodeMatches(old) == c.cfg.NodeMatches(node) && machine.Of(old) == machine.Of(node) &&
			old.Labels[v1.LabelHostname] == node.Labels[v1.LabelHostname] {
			return
		}
	}
	if c.cfg.NodeMatches(node) {
		c.requestDiscovery(node.Name)
	} else {
		c.queue.Add(nodeKey(node.Name))
	}
}

func (c *controller) onNodeDelete(obj interface{}) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	if node, ok := obj.(*v1.Node); ok {
		c.queue.Add(nodeKey(node.Name))
	}
}

func (c *controller) onPV(obj interface{}) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	pv, ok := obj.(*v1.PersistentVolume)
	if !ok || !c.owns(pv) {
		return
	}
	if id := pv.Labels[jobs.LabelVolumeID]; id != "" {
		c.queue.Add(volKey(id))
	}
	c.onMarkedPV(pv)
}

// onMarkedPV rewrites the blocked claims when a PV marked machine-replaced
// changes: it was marked, unmarked, bound, released or deleted.
func (c *controller) onMarkedPV(obj interface{}) {
	if pv, ok := obj.(*v1.PersistentVolume); ok && (pv.Labels[jobs.LabelMachineReplaced] != "" || pv.Labels[jobs.LabelDiskReplaced] != "") {
		c.queue.Add(blockedClaimsKey)
	}
}

// onPolicy writes the blocked claims again when the admission policy that
// holds them is created, changed (a re-apply resets them) or deleted.
func (c *controller) onPolicy(obj interface{}) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	if p, ok := obj.(*admissionv1.ValidatingAdmissionPolicy); ok && p.Name == c.opts.AdmissionPolicyName {
		c.queue.Add(blockedClaimsKey)
	}
}

func (c *controller) onJob(obj interface{}) {
	j, ok := obj.(*batchv1.Job)
	if !ok {
		return
	}
	switch j.Labels[jobs.LabelRole] {
	case jobs.RoleDiscovery:
		if n := j.Annotations[jobs.AnnNode]; n != "" {
			c.queue.Add(nodeKey(n))
		}
	case jobs.RoleCleanup:
		if id := j.Labels[jobs.LabelVolumeID]; id != "" {
			c.queue.Add(volKey(id))
		}
	}
}

func (c *controller) onJobDelete(obj interface{}) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	if j, ok := obj.(*batchv1.Job); ok {
		c.cleanup.ForgetJob(j.UID)
		c.onJob(j)
	}
}

// onPod requeues the node of a finished discovery pod, whose termination
// messages may arrive after the Job's completion, and the volume of a failed
// cleanup pod, whose message may say the Job found another machine or disk.
func (c *controller) onPod(obj interface{}) {
	pod, ok := obj.(*v1.Pod)
	if !ok {
		return
	}
	switch pod.Labels[jobs.LabelRole] {
	case jobs.RoleDiscovery:
		if jobs.PodSucceeded(pod) || pod.Status.Phase == v1.PodFailed {
			if n := pod.Annotations[jobs.AnnNode]; n != "" {
				c.queue.Add(nodeKey(n))
			}
		}
	case jobs.RoleCleanup:
		if id := pod.Labels[jobs.LabelVolumeID]; id != "" && pod.Status.Phase == v1.PodFailed {
			c.queue.Add(volKey(id))
		}
	}
}

// onNotification requests discovery when a watcher changed its node's
// NodeDiskState. Malformed objects are ignored.
func (c *controller) onNotification(obj interface{}) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return
	}
	s, err := v1alpha1.FromUnstructured(u)
	if err != nil || len(v1alpha1.Validate(s)) > 0 {
		return
	}
	if c.discovery.Notice(s.Name, s.Generation) {
		c.queue.Add(nodeKey(s.Name))
	}
}
