package config

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
)

// ConfigMap keys understood by Parse.
const (
	KeyStorageClassMap                = "storageClassMap"
	KeyNodeSelector                   = "nodeSelector"
	KeyJobTolerations                 = "jobTolerations"
	KeyUseDaemonSetTolerations        = "useDaemonSetTolerations"
	KeyDeleteUnboundPVsOfDeletedNodes = "deleteUnboundPVsOfDeletedNodes"
	KeyNodeLabelsForPV                = "nodeLabelsForPV"
	KeyLabelsForPV                    = "labelsForPV"
)

// ignoredUpstreamKeys are keys of the upstream provisioner's ConfigMap that
// have no meaning here. Parse accepts them with a warning so that an upstream
// ConfigMap can be reused during a migration.
var ignoredUpstreamKeys = map[string]string{
	"useAlphaAPI":                      "the alpha node affinity annotation is not supported",
	"useJobForCleaning":                "cleanup always runs in Jobs",
	"minResyncPeriod":                  "the master is event driven",
	"useNodeNameOnly":                  "PV names never contain the node UID",
	"setPVOwnerRef":                    "use deleteUnboundPVsOfDeletedNodes",
	"removeNodeNotReadyTaint":          "taint removal is not supported",
	"provisionerNotReadyNodeTaintKey":  "taint removal is not supported",
	"labelsForPVFromNode":              "use nodeLabelsForPV",
	"provisionerNotReadyNodeTaintKeys": "taint removal is not supported",
}

// Volume modes of a class.
const (
	VolumeModeFilesystem = string(v1.PersistentVolumeFilesystem)
	VolumeModeBlock      = string(v1.PersistentVolumeBlock)
)

// DefaultNamePattern matches every entry of a discovery directory.
const DefaultNamePattern = "*"

// BlockDeviceVariable is set in the environment of a block cleaner command,
// and "$(LOCAL_PV_BLKDEVICE)" in its arguments is replaced, with the path of
// the device the cleanup checked: /proc/self/fd/3, the descriptor the
// command inherits (package cleanup).
const BlockDeviceVariable = "LOCAL_PV_BLKDEVICE"

// Configuration is the parsed ConfigMap.
type Configuration struct {
	// StorageClassMap maps a StorageClass name to where its volumes are.
	StorageClassMap map[string]MountConfig `json:"storageClassMap"`
	// NodeSelector selects the nodes with local disks. Nil selects all nodes.
	NodeSelector *v1.NodeSelector `json:"nodeSelector,omitempty"`
	// JobTolerations are added to every discovery and cleanup Job.
	JobTolerations []v1.Toleration `json:"jobTolerations,omitempty"`
	// UseDaemonSetTolerations adds the tolerations that the DaemonSet
	// controller gives its pods (not-ready, unreachable, pressure,
	// unschedulable). Default true.
	UseDaemonSetTolerations bool `json:"useDaemonSetTolerations"`
	// DeleteUnboundPVsOfDeletedNodes deletes the Available PVs of a node
	// whose Node object is gone, and the Released ones after queueing their
	// cleanup. Default false.
	DeleteUnboundPVsOfDeletedNodes bool `json:"deleteUnboundPVsOfDeletedNodes"`
	// NodeLabelsForPV lists Node label keys copied onto each PV.
	NodeLabelsForPV []string `json:"nodeLabelsForPV,omitempty"`
	// LabelsForPV are static labels added to each PV.
	LabelsForPV map[string]string `json:"labelsForPV,omitempty"`

	nodeSelector *nodeaffinity.NodeSelector
}

// MountConfig says where a class's volumes live on each node.
type MountConfig struct {
	// HostDir is the discovery directory on the host. Each first-level entry
	// is one volume and its PV path is HostDir/entry. With a DiskSelector it
	// is the directory of stable disk links.
	HostDir string `json:"hostDir"`
	// MountDir is where HostDir is mounted inside the provisioner's
	// containers. Defaults to HostDir.
	MountDir string `json:"mountDir,omitempty"`
	// BlockCleanerCommand is the argv run to wipe a block device. Required
	// for Block classes and for Filesystem classes with an fsType.
	BlockCleanerCommand []string `json:"blockCleanerCommand,omitempty"`
	// VolumeMode is Filesystem (default) or Block.
	VolumeMode string `json:"volumeMode,omitempty"`
	// FsType is set on PVs of block devices found in a Filesystem class; the
	// kubelet formats them. Without it, a Filesystem class accepts only
	// mount points.
	FsType string `json:"fsType,omitempty"`
	// NamePattern is a comma-separated list of globs; default "*".
	NamePattern string `json:"namePattern,omitempty"`
	// Selector holds extra node selector terms, ORed with the node's
	// hostname term in each PV's node affinity.
	Selector []v1.NodeSelectorTerm `json:"selector,omitempty"`
	// AccessMode of the PVs; default ReadWriteOnce.
	AccessMode string `json:"accessMode,omitempty"`
	// DiskSelector, when set, makes the class publish the whole, unused
	// disks whose properties match, each under one of its stable links in
	// HostDir (default /dev/disk/by-id), instead of every entry of HostDir.
	DiskSelector *DiskSelector `json:"diskSelector,omitempty"`
	// ReleaseClaimsOfDeletedNodesAfter, when above zero, makes the master
	// delete the bound claims of the class's PVs on a Node that was deleted
	// and has not come back for this long, and then those PVs without a
	// wipe (package nodecleanup). Zero (the default) turns it off.
	ReleaseClaimsOfDeletedNodesAfter Duration `json:"releaseClaimsOfDeletedNodesAfter,omitempty"`
}

// NodeMatches reports whether node is selected by the configuration's
// nodeSelector. It is only valid on a Configuration returned by Parse.
func (c *Configuration) NodeMatches(node *v1.Node) bool {
	if c.nodeSelector == nil {
		return true
	}
	return c.nodeSelector.Match(node)
}
