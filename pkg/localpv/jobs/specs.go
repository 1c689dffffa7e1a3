package jobs

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"strconv"

	batchv1 "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/nodeplug/nodeplug/pkg/localpv/config"
	"github.com/nodeplug/nodeplug/pkg/localpv/discovery"
	"github.com/nodeplug/nodeplug/pkg/localpv/identity"
	"github.com/nodeplug/nodeplug/pkg/localpv/naming"
	"github.com/nodeplug/nodeplug/pkg/localpv/report"
)

// TerminationMessagePath is where Job containers write their termination
// message. It lies outside /dev: block classes mount the host's /dev over the
// container's, read-only for discovery, so the kubelet's default
// /dev/termination-log could not be created there (and, on a writable /dev,
// would be created on the host).
const TerminationMessagePath = "/termination-log"

// Params are the settings shared by all Jobs.
type Params struct {
	Namespace       string
	Image           string
	ImagePullPolicy v1.PullPolicy
	// DiscoveryShards is the number of containers discovery pods start
	// with (1-3); a node whose report needs more gets more.
	DiscoveryShards int
	// DiscoveryTTL becomes discovery Jobs' ttlSecondsAfterFinished.
	// Cleanup Jobs have none (see CleanupJob).
	DiscoveryTTL int32
	// DiscoveryDeadline and CleanupDeadline bound a discovery and a
	// cleanup Job's run time, Pending included, in seconds
	// (activeDeadlineSeconds); 0 leaves a Job unbounded.
	DiscoveryDeadline, CleanupDeadline int64
	// PriorityClassName is set on Job pods when not empty.
	PriorityClassName string
	// FSUUIDUnavailable, for tests, is passed to discovery and cleanup
	// containers as identity.UnavailableEnv: the sources of a file system's
	// UUID they must not use (e2e runs kernels before 6.9's paths on CI's).
	FSUUIDUnavailable string
}

// testEnv returns the environment of Job containers.
func testEnv(p Params) []v1.EnvVar {
	if p.FSUUIDUnavailable == "" {
		return nil
	}
	return []v1.EnvVar{{Name: identity.UnavailableEnv, Value: p.FSUUIDUnavailable}}
}

// Tolerations returns the tolerations of every Job: the DaemonSet
// controller's defaults when enabled, then the configured ones.
func Tolerations(cfg *config.Configuration) []v1.Toleration {
	var out []v1.Toleration
	if cfg.UseDaemonSetTolerations {
		for _, k := range []string{v1.TaintNodeNotReady, v1.TaintNodeUnreachable} {
			out = append(out, v1.Toleration{Key: k, Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute})
		}
		for _, k := range []string{v1.TaintNodeDiskPressure, v1.TaintNodeMemoryPressure,
			v1.TaintNodePIDPressure, v1.TaintNodeUnschedulable} {
			out = append(out, v1.Toleration{Key: k, Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoSchedule})
		}
	}
	return append(out, cfg.JobTolerations...)
}

// pinnedAffinity pins a pod to one node by name, like DaemonSet pods.
func pinnedAffinity(nodeName string) *v1.Affinity {
	return &v1.Affinity{NodeAffinity: &v1.NodeAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{{
			MatchFields: []v1.NodeSelectorRequirement{{Key: "metadata.name", Operator: v1.NodeSelectorOpIn, Values: []string{nodeName}}},
		}}},
	}}
}

func baseJob(p Params, cfg *config.Configuration, name, role, nodeName string) *batchv1.Job {
	labels := map[string]string{LabelManagedBy: ManagedByValue, LabelRole: role, LabelNodeID: naming.NodeID(nodeName)}
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: p.Namespace, Labels: labels,
			Annotations: map[string]string{AnnNode: nodeName}},
		Spec: batchv1.JobSpec{
			Template: v1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: copyMap(labels), Annotations: map[string]string{AnnNode: nodeName}},
				Spec: v1.PodSpec{
					RestartPolicy:                 v1.RestartPolicyNever,
					AutomountServiceAccountToken:  ptr.To(false),
					EnableServiceLinks:            ptr.To(false),
					Affinity:                      pinnedAffinity(nodeName),
					Tolerations:                   Tolerations(cfg),
					PriorityClassName:             p.PriorityClassName,
					TerminationGracePeriodSeconds: ptr.To[int64](30),
				},
			},
		},
	}
}

func hostPathVolume(name, path string, t v1.HostPathType) v1.Volume {
	return v1.Volume{Name: name, VolumeSource: v1.VolumeSource{HostPath: &v1.HostPathVolumeSource{Path: path, Type: &t}}}
}

func smallResources() v1.ResourceRequirements {
	return v1.ResourceRequirements{Requests: v1.ResourceList{
		v1.ResourceCPU: resource.MustParse("10m"), v1.ResourceMemory: resource.MustParse("32Mi")}}
}

// DiscoveryJob returns the discovery Job of a node, with shards containers
// (p.DiscoveryShards when shards is not above it). Every configured class's
// host directory is mounted read-only at its mountDir, /dev when a class
// may hold devices or a held path lies in it, and the host's udev database
// (a class with a disk selector reads its disks' records; every class may
// need a file system's UUID from it, see package identity), and the host's
// /etc, read-only, for its machine-id file, which tells directories on the
// OS's file system (see package identity). held are the
// host paths of the node's other local PVs, which the Job resolves (at most
// report.MaxHeld; see HeldPaths; the others are counted in --held-omitted
// and make the master refuse what they could hide). The pod has no API
// credentials.
func DiscoveryJob(p Params, cfg *config.Configuration, nodeName string, shards int, held []string) *batchv1.Job {
	j := baseJob(p, cfg, naming.DiscoveryJobName(nodeName), RoleDiscovery, nodeName)
	j.Spec.TTLSecondsAfterFinished = ptr.To(p.DiscoveryTTL)
	j.Spec.BackoffLimit = ptr.To[int32](2)
	if p.DiscoveryDeadline > 0 {
		j.Spec.ActiveDeadlineSeconds = ptr.To(p.DiscoveryDeadline)
	}
	var specs []discovery.ClassSpec
	var mounts []v1.VolumeMount
	devices, probes := false, false
	prop := v1.MountPropagationHostToContainer
	ps := &j.Spec.Template.Spec
	for i, name := range cfg.ClassNames() {
		mc := cfg.StorageClassMap[name]
		specs = append(specs, discovery.SpecFor(name, mc))
		devices = devices || mc.AcceptsDevices()
		probes = probes || mc.DiskSelector != nil
		if mc.InDev() {
			continue // seen through the /dev mount
		}
		vol := "class-" + strconv.Itoa(i)
		ps.Volumes = append(ps.Volumes, hostPathVolume(vol, mc.HostDir, v1.HostPathDirectoryOrCreate))
		mounts = append(mounts, v1.VolumeMount{Name: vol, MountPath: mc.MountDir, ReadOnly: true, MountPropagation: &prop})
	}
	heldPaths, heldInDev := HeldPaths(cfg, held)
	if devices || heldInDev {
		ps.Volumes = append(ps.Volumes, hostPathVolume("dev", "/dev", v1.HostPathDirectory))
		// No propagation: new device nodes appear in the one devtmpfs
		// without a mount event, and HostToContainer would make the kubelet
		// refuse hosts whose /dev is a private mount.
		mounts = append(mounts, v1.VolumeMount{Name: "dev", MountPath: "/dev", ReadOnly: true})
	}
	// udev's database only, not all of /run: that holds the container
	// runtime's socket and every container's root file system mount.
	ps.Volumes = append(ps.Volumes, hostPathVolume("udev", HostUdevDir, v1.HostPathDirectoryOrCreate))
	mounts = append(mounts, v1.VolumeMount{Name: "udev", MountPath: UdevMountPath, ReadOnly: true})
	ps.Volumes, mounts = withHostEtc(ps.Volumes, mounts)
	args := discoveryArgs(nodeName, specs, heldPaths, len(held)-len(heldPaths))
	shards = min(max(shards, p.DiscoveryShards, 1), report.MaxShards)
	for i := range shards {
		ps.Containers = append(ps.Containers, v1.Container{
			Name:            "discover-" + strconv.Itoa(i),
			Image:           p.Image,
			ImagePullPolicy: p.ImagePullPolicy,
			Args: append(slices.Clone(args), "--shard="+strconv.Itoa(i), "--shards="+strconv.Itoa(shards),
				"--termination-log="+TerminationMessagePath),
			VolumeMounts:             mounts,
			Env:                      testEnv(p),
			TerminationMessagePath:   TerminationMessagePath,
			TerminationMessagePolicy: v1.TerminationMessageReadFile,
			Resources:                smallResources(),
			SecurityContext:          discoverySecurityContext(probes || devices),
		})
	}
	return j
}

// discoveryArgs returns the discover command; omitted counts the held paths
// beyond report.MaxHeld, which the report carries so that the master
// refuses what they could hide instead of forgetting them.
func discoveryArgs(nodeName string, specs []discovery.ClassSpec, held []discovery.HeldPath, omitted int) []string {
	classes, _ := json.Marshal(specs)
	args := []string{"discover", "--node-name=" + nodeName, "--classes=" + string(classes)}
	if len(held) > 0 {
		b, _ := json.Marshal(held)
		args = append(args, "--held-paths="+string(b))
	}
	if omitted > 0 {
		args = append(args, "--held-omitted="+strconv.Itoa(omitted))
	}
	return args
}

// HeldPaths returns where a discovery container sees each of the host paths
// of the node's other local PVs, for at most report.MaxHeld of them: below
// a class's mountDir for a path in its hostDir (every class's hostDir is
// mounted), itself for a path in /dev, and nowhere (an empty container
// path) otherwise. inDev reports whether a path lies in /dev, which the Job
// must then mount.
func HeldPaths(cfg *config.Configuration, held []string) (out []discovery.HeldPath, inDev bool) {
	for _, h := range held[:min(len(held), report.MaxHeld)] {
		hp := discovery.HeldPath{Path: h}
		clean := filepath.Clean(h)
		if filepath.IsAbs(h) {
			hp.Container = classPath(cfg, clean)
			if hp.Container == "" && config.Within(clean, "/dev") {
				hp.Container = clean
			}
		}
		inDev = inDev || config.Within(hp.Container, "/dev")
		out = append(out, hp)
	}
	return out, inDev
}

// classPath returns where a discovery container sees the clean host path p
// that lies in a class's hostDir, or "".
func classPath(cfg *config.Configuration, p string) string {
	for _, name := range cfg.ClassNames() {
		mc := cfg.StorageClassMap[name]
		if !config.Within(p, mc.HostDir) {
			continue
		}
		rel, err := filepath.Rel(mc.HostDir, p)
		if err != nil {
			continue
		}
		return filepath.Join(mc.MountDir, rel)
	}
	return ""
}

// discoverySecurityContext is that of a discovery container. With probes,
// a class chooses disks by their properties or may hold block devices, and
// opening a disk (O_EXCL, to tell whether it is in use, then to read its
// first and last bytes; a plain Block class's new devices are checked as a
// selector's disks are) needs the device cgroup's permission, which only a
// privileged container has. Its /dev mount is read-only, but that does not stop a privileged
// process from writing to a device node: discovery's code only reads.
func discoverySecurityContext(probes bool) *v1.SecurityContext {
	if probes {
		return &v1.SecurityContext{RunAsUser: ptr.To[int64](0), ReadOnlyRootFilesystem: ptr.To(true), Privileged: ptr.To(true)}
	}
	return &v1.SecurityContext{
		RunAsUser:                ptr.To[int64](0),
		ReadOnlyRootFilesystem:   ptr.To(true),
		AllowPrivilegeEscalation: ptr.To(false),
		Capabilities:             &v1.Capabilities{Drop: []v1.Capability{"ALL"}, Add: []v1.Capability{"DAC_READ_SEARCH"}},
	}
}

// CleanupTarget is the volume a cleanup Job wipes.
type CleanupTarget struct {
	PVName, PVUID string
	NodeName      string
	Class         string
	Kind          report.VolumeKind
	HostPath      string
	Mount         config.MountConfig
	// VolumeID is the PV's volume ID; empty means naming.VolumeID of the
	// node and path.
	VolumeID string
	// MachineID and SystemUUID are the PV's machine (empty: not recorded),
	// DiskID its disk. The Job checks them on the node before it wipes.
	MachineID, SystemUUID string
	DiskID                identity.ID
}

// CleanupJob returns the cleanup Job of one attempt. It carries the whole
// target in annotations, so a retry can be built from it after the PV is
// gone. It has no finalizer, so deleting its namespace never waits for the
// master, and no ttlSecondsAfterFinished: a Job is the lock of its path
// until the master has acted on its result (reported it, and retried it,
// or deleted or dropped its PV), which it does before it deletes the Job.
// With the PV gone, a failed Job is the only lock; a TTL would let it go,
// with the disk unwiped, while no master ran. Its container checks the
// PV's machine and disk before it wipes: when a machine ID is recorded, or
// the disk is a directory on the OS's file system, the host's /etc is
// mounted read-only as a directory (withHostEtc), so that a node without
// /etc/machine-id runs the pod, which cannot read the ID, rather than
// leaving it Pending; params.CleanupDeadline bounds the whole run.
func CleanupJob(p Params, cfg *config.Configuration, t CleanupTarget, attempt int) *batchv1.Job {
	volID := t.VolumeID
	if volID == "" {
		volID = naming.VolumeID(t.NodeName, t.HostPath)
	}
	j := baseJob(p, cfg, naming.CleanupJobName(volID, attempt), RoleCleanup, t.NodeName)
	j.Labels[LabelVolumeID] = volID
	j.Spec.Template.Labels[LabelVolumeID] = volID
	for k, v := range map[string]string{AnnHostPath: t.HostPath, AnnClass: t.Class, AnnKind: string(t.Kind),
		AnnPVName: t.PVName, AnnPVUID: t.PVUID, AnnAttempt: strconv.Itoa(attempt)} {
		j.Annotations[k] = v
	}
	for k, v := range map[string]string{AnnMachineID: t.MachineID, AnnSystemUUID: t.SystemUUID, AnnDiskID: string(t.DiskID)} {
		if v != "" {
			j.Annotations[k] = v
		}
	}
	j.Spec.BackoffLimit = ptr.To[int32](0)
	if p.CleanupDeadline > 0 {
		j.Spec.ActiveDeadlineSeconds = ptr.To(p.CleanupDeadline)
	}
	prop := v1.MountPropagationHostToContainer
	ps := &j.Spec.Template.Spec
	// DirectoryOrCreate: a missing directory must fail the cleanup ("not a
	// mount point") rather than leave the pod waiting for a volume forever.
	var mounts []v1.VolumeMount
	if !t.Mount.InDev() { // otherwise seen through the /dev mount
		ps.Volumes = []v1.Volume{hostPathVolume("class", t.Mount.HostDir, v1.HostPathDirectoryOrCreate)}
		mounts = []v1.VolumeMount{{Name: "class", MountPath: t.Mount.MountDir, MountPropagation: &prop}}
	}
	sc := &v1.SecurityContext{RunAsUser: ptr.To[int64](0), ReadOnlyRootFilesystem: ptr.To(true)}
	if t.Kind == report.KindBlock {
		ps.Volumes = append(ps.Volumes, hostPathVolume("dev", "/dev", v1.HostPathDirectory))
		// No propagation, as in DiscoveryJob.
		mounts = append(mounts, v1.VolumeMount{Name: "dev", MountPath: "/dev"})
		sc.Privileged = ptr.To(true)
	} else {
		ps.Volumes = append(ps.Volumes, hostPathVolume("udev", HostUdevDir, v1.HostPathDirectoryOrCreate))
		mounts = append(mounts, v1.VolumeMount{Name: "udev", MountPath: UdevMountPath, ReadOnly: true})
	}
	if t.MachineID != "" || t.DiskID.Kind() == identity.KindOSFS {
		ps.Volumes, mounts = withHostEtc(ps.Volumes, mounts)
	}
	ps.Containers = []v1.Container{{
		Name:                     "cleanup",
		Image:                    p.Image,
		ImagePullPolicy:          p.ImagePullPolicy,
		Args:                     cleanupArgs(t),
		VolumeMounts:             mounts,
		Env:                      testEnv(p),
		TerminationMessagePath:   TerminationMessagePath,
		TerminationMessagePolicy: v1.TerminationMessageFallbackToLogsOnError,
		Resources:                smallResources(),
		SecurityContext:          sc,
	}}
	return j
}

func cleanupArgs(t CleanupTarget) []string {
	command, _ := json.Marshal(t.Mount.BlockCleanerCommand)
	args := []string{"cleanup", "--kind=" + string(t.Kind), "--mount-dir=" + t.Mount.MountDir,
		"--path=" + filepath.Join(t.Mount.MountDir, filepath.Base(t.HostPath)), "--command=" + string(command)}
	if t.MachineID != "" {
		args = append(args, "--machine-id="+t.MachineID) // read from MachineIDPath
	}
	if t.SystemUUID != "" {
		args = append(args, "--system-uuid="+t.SystemUUID)
	}
	return append(args, "--disk-id="+string(t.DiskID), "--termination-log="+TerminationMessagePath)
}

// RetryJob returns the next attempt of a failed cleanup Job. A failed Job
// made before cleanup Jobs lost their finalizer and their TTL keeps them,
// the retry does not.
func RetryJob(failed *batchv1.Job, attempt int) *batchv1.Job {
	j := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{
		Name:        naming.CleanupJobName(failed.Labels[LabelVolumeID], attempt),
		Namespace:   failed.Namespace,
		Labels:      copyMap(failed.Labels),
		Annotations: copyMap(failed.Annotations),
	}}
	j.Annotations[AnnAttempt] = strconv.Itoa(attempt)
	failed.Spec.DeepCopyInto(&j.Spec)
	// The Job controller adds these to the spec; a new Job must not carry them.
	j.Spec.Selector = nil
	j.Spec.ManualSelector = nil
	j.Spec.TTLSecondsAfterFinished = nil
	delete(j.Spec.Template.Labels, "controller-uid")
	delete(j.Spec.Template.Labels, batchv1.ControllerUidLabel)
	delete(j.Spec.Template.Labels, batchv1.JobNameLabel)
	delete(j.Spec.Template.Labels, "job-name")
	return j
}

func copyMap(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
