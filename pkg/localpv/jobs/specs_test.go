package jobs

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	batchv1 "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/ptr"

	"github.com/nodeplug/nodeplug/pkg/localpv/config"
	"github.com/nodeplug/nodeplug/pkg/localpv/discovery"
	"github.com/nodeplug/nodeplug/pkg/localpv/identity"
	"github.com/nodeplug/nodeplug/pkg/localpv/naming"
	"github.com/nodeplug/nodeplug/pkg/localpv/report"
)

func testConfig(t *testing.T, extra map[string]string) *config.Configuration {
	t.Helper()
	data := map[string]string{config.KeyStorageClassMap: `
fast: {hostDir: /mnt/fast, mountDir: /mnt/fast}
blk: {hostDir: /mnt/blk, volumeMode: Block, blockCleanerCommand: [wipefs, -a, "$(LOCAL_PV_BLKDEVICE)"]}
`}
	for k, v := range extra {
		data[k] = v
	}
	cfg, _, err := config.Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func TestTolerations(t *testing.T) {
	tests := []struct {
		name  string
		extra map[string]string
		want  []string
		not   []string
	}{
		{name: "daemonset defaults", want: []string{v1.TaintNodeNotReady, v1.TaintNodeUnreachable, v1.TaintNodeUnschedulable, v1.TaintNodeDiskPressure}},
		{name: "defaults disabled", extra: map[string]string{config.KeyUseDaemonSetTolerations: "false"}, not: []string{v1.TaintNodeNotReady}},
		{name: "configured added", extra: map[string]string{config.KeyJobTolerations: "- {key: storage, operator: Exists}"}, want: []string{"storage", v1.TaintNodeNotReady}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var keys []string
			for _, tol := range Tolerations(testConfig(t, tc.extra)) {
				keys = append(keys, tol.Key)
			}
			for _, k := range tc.want {
				if !slices.Contains(keys, k) {
					t.Errorf("missing toleration %s in %v", k, keys)
				}
			}
			for _, k := range tc.not {
				if slices.Contains(keys, k) {
					t.Errorf("unexpected toleration %s", k)
				}
			}
		})
	}
}

func TestDiscoveryJobMountsEveryClassReadOnly(t *testing.T) {
	j := DiscoveryJob(Params{Namespace: "lpv", Image: "img", DiscoveryShards: 3}, testConfig(t, nil), strings.Repeat("n", 253), 0, nil)
	if errs := validation.IsDNS1123Label(j.Name); len(errs) > 0 {
		t.Fatalf("bad Job name: %v", errs)
	}
	ctr := j.Spec.Template.Spec.Containers[0]
	mounts := map[string]bool{}
	for _, m := range ctr.VolumeMounts {
		if !m.ReadOnly {
			t.Errorf("discovery mount %s is writable", m.MountPath)
		}
		mounts[m.MountPath] = true
	}
	for _, p := range []string{"/mnt/fast", "/mnt/blk", "/dev"} {
		if !mounts[p] {
			t.Errorf("missing mount %s", p)
		}
	}
	// The blk class holds block devices, whose use discovery probes.
	if len(j.Spec.Template.Spec.Containers) != 3 || ctr.SecurityContext.Privileged == nil || !*ctr.SecurityContext.Privileged {
		t.Error("want 3 privileged shard containers")
	}
}

func TestRetryJobStripsControllerFields(t *testing.T) {
	cfg := testConfig(t, nil)
	target := CleanupTarget{PVName: "pv", PVUID: "uid", NodeName: "a", Class: "blk", Kind: report.KindBlock,
		HostPath: "/mnt/blk/sdb", Mount: cfg.StorageClassMap["blk"]}
	failed := CleanupJob(Params{Namespace: "lpv", Image: "img"}, cfg, target, 1)
	failed.UID = "job-uid"
	failed.Spec.Selector = nil
	failed.Spec.Template.Labels[batchv1.ControllerUidLabel] = "job-uid"
	failed.Spec.Template.Labels[batchv1.JobNameLabel] = failed.Name
	if failed.Spec.TTLSecondsAfterFinished != nil {
		t.Fatal("a cleanup Job has a TTL: it could go before the master acted on its result")
	}
	failed.Spec.TTLSecondsAfterFinished = ptr.To[int32](3600) // as older masters made them
	retry := RetryJob(failed, 2)
	if retry.Name != naming.CleanupJobName(naming.VolumeID("a", "/mnt/blk/sdb"), 2) || Attempt(retry) != 2 {
		t.Fatalf("bad retry identity: %s attempt %d", retry.Name, Attempt(retry))
	}
	if _, ok := retry.Spec.Template.Labels[batchv1.ControllerUidLabel]; ok || retry.UID != "" {
		t.Fatal("retry carries the failed Job's controller fields")
	}
	if retry.Annotations[AnnPVUID] != "uid" || len(retry.Finalizers) != 0 || retry.Spec.TTLSecondsAfterFinished != nil {
		t.Fatalf("retry lost its target, or carries finalizers %v or a TTL", retry.Finalizers)
	}
	if Attempt(failed) != 1 {
		t.Fatal("RetryJob modified the failed Job")
	}
}

func TestTerminationMessageOutsideMounts(t *testing.T) {
	cfg := testConfig(t, nil)
	p := Params{Namespace: "lpv", Image: "img", DiscoveryShards: 2}
	target := func(class string, kind report.VolumeKind, path string) CleanupTarget {
		return CleanupTarget{PVName: "pv", PVUID: "uid", NodeName: "a", Class: class, Kind: kind,
			HostPath: path, Mount: cfg.StorageClassMap[class]}
	}
	tests := []struct {
		name string
		job  *batchv1.Job
	}{
		{name: "discovery with /dev", job: DiscoveryJob(p, cfg, "a", 0, nil)},
		{name: "directory cleanup", job: CleanupJob(p, cfg, target("fast", report.KindDirectory, "/mnt/fast/v1"), 1)},
		{name: "block cleanup with /dev", job: CleanupJob(p, cfg, target("blk", report.KindBlock, "/mnt/blk/sdb"), 1)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for _, ctr := range tc.job.Spec.Template.Spec.Containers {
				path := ctr.TerminationMessagePath
				if path != TerminationMessagePath {
					t.Errorf("container %s: terminationMessagePath %q, want %q", ctr.Name, path, TerminationMessagePath)
				}
				for _, m := range ctr.VolumeMounts {
					if path == m.MountPath || strings.HasPrefix(path, strings.TrimSuffix(m.MountPath, "/")+"/") {
						t.Errorf("container %s: terminationMessagePath %s lies under mount %s", ctr.Name, path, m.MountPath)
					}
				}
				if !slices.Contains(ctr.Args, "--termination-log="+path) {
					t.Errorf("container %s: command does not write %s: %v", ctr.Name, path, ctr.Args)
				}
			}
		})
	}
}

func TestDiskSelectorJobs(t *testing.T) {
	cfg := testConfig(t, map[string]string{config.KeyStorageClassMap: `
ssd: {volumeMode: Block, blockCleanerCommand: [blkdiscard], diskSelector: {rotational: false}}
e2e: {hostDir: /mnt/disks/by-id, volumeMode: Block, blockCleanerCommand: [blkdiscard], diskSelector: {}}
`})
	p := Params{Namespace: "ns", Image: "img", DiscoveryShards: 1}
	j := DiscoveryJob(p, cfg, "node-1", 1, nil)
	ps := j.Spec.Template.Spec
	var paths []string
	for _, v := range ps.Volumes {
		paths = append(paths, v.HostPath.Path)
	}
	if !slices.Equal(paths, []string{"/mnt/disks/by-id", "/dev", HostUdevDir, "/etc"}) {
		t.Errorf("volumes = %v, want the link directory outside /dev, /dev, udev's directory and /etc", paths)
	}
	for _, m := range ps.Containers[0].VolumeMounts {
		if !m.ReadOnly || m.Name == "udev" && m.MountPath != UdevMountPath {
			t.Errorf("mount %+v: want read-only, udev's at %s", m, UdevMountPath)
		}
	}
	sc := ps.Containers[0].SecurityContext
	if sc.Privileged == nil || !*sc.Privileged || sc.AllowPrivilegeEscalation != nil {
		t.Errorf("a discovery probing disks must be privileged: %+v", sc)
	}
	if !strings.Contains(ps.Containers[0].Args[2], `"diskSelector":{"rotational":false}`) {
		t.Errorf("classes argument lacks the selector: %s", ps.Containers[0].Args[2])
	}
	c := CleanupJob(p, cfg, CleanupTarget{PVName: "pv", NodeName: "node-1", Class: "ssd", Kind: report.KindBlock,
		HostPath: "/dev/disk/by-id/wwn-0x1", Mount: cfg.StorageClassMap["ssd"]}, 0)
	cps := c.Spec.Template.Spec
	if len(cps.Volumes) != 1 || cps.Volumes[0].HostPath.Path != "/dev" {
		t.Errorf("cleanup of a disk in /dev/disk/by-id mounts %+v, want /dev only", cps.Volumes)
	}
	if got := cps.Containers[0].Args[3]; got != "--path=/dev/disk/by-id/wwn-0x1" {
		t.Errorf("path argument = %s", got)
	}
	dirs := testConfig(t, map[string]string{config.KeyStorageClassMap: "fast: {hostDir: /mnt/fast, mountDir: /mnt/fast}\n"})
	plain := DiscoveryJob(p, dirs, "node-1", 1, nil).Spec.Template.Spec.Containers[0].SecurityContext
	if plain.Privileged != nil || plain.AllowPrivilegeEscalation == nil || *plain.AllowPrivilegeEscalation {
		t.Errorf("discovery of directories only must stay unprivileged: %+v", plain)
	}
}

// TestDiscoveryOfPlainBlockClassesOpensDevices (N3 d): a Block class
// without a disk selector has its new devices probed (O_EXCL, signatures)
// like a selector's disks, which needs a privileged container.
func TestDiscoveryOfPlainBlockClassesOpensDevices(t *testing.T) {
	cfg := testConfig(t, map[string]string{config.KeyStorageClassMap: `
blk: {hostDir: /mnt/blk, volumeMode: Block, blockCleanerCommand: [blkdiscard, "$(LOCAL_PV_BLKDEVICE)"]}
`})
	ps := DiscoveryJob(Params{Namespace: "ns", Image: "img", DiscoveryShards: 1}, cfg, "node-1", 1, nil).Spec.Template.Spec
	if sc := ps.Containers[0].SecurityContext; sc.Privileged == nil || !*sc.Privileged {
		t.Errorf("discovery of a plain Block class cannot open its devices: %+v", sc)
	}
}

func TestDiscoveryJobHeldPaths(t *testing.T) {
	cfg := testConfig(t, map[string]string{config.KeyStorageClassMap: `
fast: {hostDir: /mnt/fast, mountDir: /lpv/fast}
`})
	p := Params{Namespace: "ns", Image: "img", DiscoveryShards: 2}
	held := []string{"/mnt/fast/vol1", "/mnt/fast", "/mnt/fast/../../etc", "/mnt/fastx/a", "/var/lib/other/pv", "rel/pv"}
	want := []discovery.HeldPath{{Path: "/mnt/fast/vol1", Container: "/lpv/fast/vol1"}, {Path: "/mnt/fast", Container: "/lpv/fast"},
		{Path: "/mnt/fast/../../etc"}, {Path: "/mnt/fastx/a"}, {Path: "/var/lib/other/pv"}, {Path: "rel/pv"}}
	tests := []struct {
		name    string
		held    []string
		want    []discovery.HeldPath
		wantDev bool
	}{
		{name: "none"},
		{name: "class directory or nowhere", held: held, want: want},
		{name: "a device link mounts /dev", held: append(slices.Clone(held), "/dev/disk/by-id/wwn-0x1"),
			want: append(slices.Clone(want), discovery.HeldPath{Path: "/dev/disk/by-id/wwn-0x1", Container: "/dev/disk/by-id/wwn-0x1"}), wantDev: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ps := DiscoveryJob(p, cfg, "node-1", 1, tc.held).Spec.Template.Spec
			for _, ctr := range ps.Containers {
				var got []discovery.HeldPath
				for _, a := range ctr.Args {
					if v, ok := strings.CutPrefix(a, "--held-paths="); ok {
						if err := json.Unmarshal([]byte(v), &got); err != nil {
							t.Fatal(err)
						}
					}
				}
				if diff := cmp.Diff(tc.want, got); diff != "" {
					t.Errorf("container %s: held paths (-want +got):\n%s", ctr.Name, diff)
				}
			}
			dev := slices.ContainsFunc(ps.Volumes, func(v v1.Volume) bool { return v.HostPath.Path == "/dev" })
			if dev != tc.wantDev {
				t.Errorf("/dev mounted %v, want %v", dev, tc.wantDev)
			}
		})
	}
	many := make([]string, report.MaxHeld+3)
	for i := range many {
		many[i] = fmt.Sprintf("/mnt/fast/v%d", i)
	}
	if got, _ := HeldPaths(cfg, many); len(got) != report.MaxHeld {
		t.Errorf("%d held paths passed, want at most %d", len(got), report.MaxHeld)
	}
}

// TestDiscoveryJobCountsOmittedHeldPaths (N3 c): the held paths beyond
// report.MaxHeld are not dropped silently: the Job is told how many were
// left out, and its report carries the count to the master.
func TestDiscoveryJobCountsOmittedHeldPaths(t *testing.T) {
	cfg := testConfig(t, nil)
	p := Params{Namespace: "ns", Image: "img", DiscoveryShards: 1}
	for _, tc := range []struct {
		name string
		held int
		want string
	}{
		{name: "64 held paths", held: report.MaxHeld},
		{name: "65 held paths", held: report.MaxHeld + 1, want: "--held-omitted=1"},
		{name: "100 held paths", held: 100, want: "--held-omitted=36"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			held := make([]string, tc.held)
			for i := range held {
				held[i] = fmt.Sprintf("/var/lib/other/pv%d", i)
			}
			for _, ctr := range DiscoveryJob(p, cfg, "node-1", 1, held).Spec.Template.Spec.Containers {
				got := ""
				for _, a := range ctr.Args {
					if strings.HasPrefix(a, "--held-omitted=") {
						got = a
					}
				}
				if got != tc.want {
					t.Errorf("container %s: %q, want %q", ctr.Name, got, tc.want)
				}
			}
		})
	}
}

func TestCleanupJobCarriesIdentity(t *testing.T) {
	cfg := testConfig(t, nil)
	const disk = "fs:1b4e28ba-2fa1-11d2-883f-0016d3cca427:1.0200"
	const osDisk = "osfs:1b4e28ba-2fa1-11d2-883f-0016d3cca427:1.0200:3f9a1c0e5b7d4e2f8a6b0c1d2e3f4a5b"
	tests := []struct {
		name           string
		machine, uuid  string
		disk           identity.ID
		wantArgs       []string
		notArgs        []string
		wantMachineVol bool
	}{
		{name: "machine and disk", machine: "4b2f1c9e", uuid: "EC2A6C3E-1B2D",
			wantArgs:       []string{"--machine-id=4b2f1c9e", "--system-uuid=EC2A6C3E-1B2D", "--disk-id=" + disk},
			wantMachineVol: true},
		{name: "system UUID only", uuid: "EC2A6C3E-1B2D", wantArgs: []string{"--system-uuid=EC2A6C3E-1B2D", "--disk-id=" + disk},
			notArgs: []string{"--machine-id="}},
		{name: "no machine recorded", wantArgs: []string{"--disk-id=" + disk}, notArgs: []string{"--machine-id=", "--system-uuid="}},
		// The check reads the machine-id file to tell the OS's file system.
		{name: "a directory on the OS file system, no machine recorded", disk: osDisk, wantArgs: []string{"--disk-id=" + osDisk},
			notArgs: []string{"--machine-id="}, wantMachineVol: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			disk := identity.ID(disk)
			if tc.disk != "" {
				disk = tc.disk
			}
			target := CleanupTarget{PVName: "pv", PVUID: "uid", NodeName: "a", Class: "fast", Kind: report.KindDirectory,
				HostPath: "/mnt/fast/v1", Mount: cfg.StorageClassMap["fast"], MachineID: tc.machine, SystemUUID: tc.uuid, DiskID: disk}
			for _, j := range []*batchv1.Job{CleanupJob(Params{Namespace: "lpv", Image: "img"}, cfg, target, 1),
				RetryJob(CleanupJob(Params{Namespace: "lpv", Image: "img"}, cfg, target, 1), 2)} {
				ps := j.Spec.Template.Spec
				args := ps.Containers[0].Args
				for _, a := range tc.wantArgs {
					if !slices.Contains(args, a) {
						t.Errorf("%s: args %v lack %s", j.Name, args, a)
					}
				}
				for _, a := range tc.notArgs {
					if slices.ContainsFunc(args, func(s string) bool { return strings.HasPrefix(s, a) }) {
						t.Errorf("%s: args %v have %s", j.Name, args, a)
					}
				}
				if j.Annotations[AnnDiskID] != string(disk) || j.Annotations[AnnMachineID] != tc.machine || j.Annotations[AnnSystemUUID] != tc.uuid {
					t.Errorf("%s: annotations %v do not carry the identity", j.Name, j.Annotations)
				}
				hasVol := slices.ContainsFunc(ps.Volumes, func(v v1.Volume) bool {
					return v.HostPath != nil && v.HostPath.Path == "/etc" && *v.HostPath.Type == v1.HostPathDirectory
				})
				hasMount := slices.ContainsFunc(ps.Containers[0].VolumeMounts, func(m v1.VolumeMount) bool {
					return m.MountPath == HostEtcPath && m.ReadOnly
				})
				if hasVol != tc.wantMachineVol || hasMount != tc.wantMachineVol {
					t.Errorf("%s: machine-id volume %v, read-only mount %v; want %v", j.Name, hasVol, hasMount, tc.wantMachineVol)
				}
			}
		})
	}
}

// TestCleanupJobNeverWaitsForEver (review H1): a node without
// /etc/machine-id must not keep a cleanup pod Pending (the host's /etc is
// mounted as a directory, never the file), the Job has a deadline, and no
// finalizer keeps it, or its namespace, once it is deleted.
func TestCleanupJobNeverWaitsForEver(t *testing.T) {
	cfg := testConfig(t, nil)
	tests := []struct {
		name         string
		deadline     int64
		wantDeadline *int64
	}{
		{name: "deadline set", deadline: 3600, wantDeadline: ptr.To[int64](3600)},
		{name: "no deadline configured", deadline: 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			target := CleanupTarget{PVName: "pv", PVUID: "uid", NodeName: "a", Class: "blk", Kind: report.KindBlock,
				HostPath: "/mnt/blk/sdb", Mount: cfg.StorageClassMap["blk"], MachineID: "4b2f1c9e", DiskID: "wwn:naa.1"}
			j := CleanupJob(Params{Namespace: "lpv", Image: "img", CleanupDeadline: tc.deadline}, cfg, target, 1)
			if !reflect.DeepEqual(j.Spec.ActiveDeadlineSeconds, tc.wantDeadline) {
				t.Errorf("activeDeadlineSeconds %v, want %v", j.Spec.ActiveDeadlineSeconds, tc.wantDeadline)
			}
			if len(j.Finalizers) != 0 {
				t.Errorf("finalizers %v: a deleted Job or namespace would wait for the master", j.Finalizers)
			}
			for _, v := range j.Spec.Template.Spec.Volumes {
				if hp := v.HostPath; hp != nil && hp.Type != nil && *hp.Type == v1.HostPathFile {
					t.Errorf("volume %s is a host file (%s): the pod stays Pending where it is missing", v.Name, hp.Path)
				}
			}
		})
	}
}
