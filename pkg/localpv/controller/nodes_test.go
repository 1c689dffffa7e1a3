package controller

import (
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	compmetrics "k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/testutil"

	"github.com/nodeplug/nodeplug/pkg/localpv/config"
	"github.com/nodeplug/nodeplug/pkg/localpv/jobs"
	"github.com/nodeplug/nodeplug/pkg/localpv/metrics"
	"github.com/nodeplug/nodeplug/pkg/localpv/naming"
	"github.com/nodeplug/nodeplug/pkg/localpv/report"
)

func TestStartDiscoversSelectedNodesOnly(t *testing.T) {
	f := newFixture(t, map[string]string{config.KeyNodeSelector: "nodeSelectorTerms:\n- matchExpressions: [{key: disks, operator: Exists}]\n",
		config.KeyJobTolerations: "- {key: dedicated, operator: Exists, effect: NoSchedule}\n"},
		newNode("a", map[string]string{"disks": ""}), newNode("b", nil))
	f.c.onNode(nil, newNode("a", map[string]string{"disks": ""}))
	f.c.onNode(nil, newNode("b", nil))
	f.sync(nodeKey("a"))
	f.sync(nodeKey("b"))
	if got := f.jobNames(jobs.RoleDiscovery); len(got) != 1 || got[0] != naming.DiscoveryJobName("a") {
		t.Fatalf("discovery Jobs = %v, want only node a's", got)
	}
	j := f.job(naming.DiscoveryJobName("a"))
	ps := j.Spec.Template.Spec
	if ps.AutomountServiceAccountToken == nil || *ps.AutomountServiceAccountToken {
		t.Error("discovery pod must not get an API token")
	}
	term := ps.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms[0]
	if term.MatchFields[0].Key != "metadata.name" || term.MatchFields[0].Values[0] != "a" {
		t.Errorf("discovery Job is not pinned to node a: %+v", term)
	}
	tolerated := map[string]bool{}
	for _, tol := range ps.Tolerations {
		tolerated[tol.Key] = true
	}
	for _, k := range []string{v1.TaintNodeNotReady, v1.TaintNodeUnschedulable, v1.TaintNodeDiskPressure, "dedicated"} {
		if !tolerated[k] {
			t.Errorf("discovery Job does not tolerate %s", k)
		}
	}
	if j.Spec.TTLSecondsAfterFinished == nil || *j.Spec.TTLSecondsAfterFinished != 300 {
		t.Error("discovery Job has no ttlSecondsAfterFinished")
	}
	if len(ps.Containers) != 2 || !slices.Contains(ps.Containers[1].Args, "--shard=1") {
		t.Errorf("want 2 shard containers, got %d", len(ps.Containers))
	}
}

func TestNotificationRequestsDiscoveryOncePerGeneration(t *testing.T) {
	f := newFixture(t, nil, newNode("a", nil))
	f.notify("a", 1)
	f.sync(nodeKey("a"))
	name := naming.DiscoveryJobName("a")
	if f.job(name) == nil {
		t.Fatal("notification did not start discovery")
	}
	f.finishJob(name, true, mustEncode(t, fsReport("a"))...)
	f.sync(nodeKey("a")) // consumes and deletes the Job
	f.notify("a", 1)     // resync of the same generation
	f.sync(nodeKey("a"))
	if f.job(name) != nil {
		t.Fatal("an unchanged notification started another discovery")
	}
	f.notify("a", 2)
	f.sync(nodeKey("a"))
	if f.job(name) == nil {
		t.Fatal("a new generation did not start discovery")
	}
}

func TestRequestWhileRunningStartsOneMoreAfterwards(t *testing.T) {
	f := newFixture(t, nil, newNode("a", nil))
	name := naming.DiscoveryJobName("a")
	f.c.requestDiscovery("a")
	f.sync(nodeKey("a"))
	first := f.job(name).UID
	f.c.requestDiscovery("a")
	f.sync(nodeKey("a"))
	if f.job(name).UID != first {
		t.Fatal("a second Job was created while one runs")
	}
	f.finishJob(name, true, mustEncode(t, fsReport("a"))...)
	f.sync(nodeKey("a")) // consume, delete
	_ = f.kube.CoreV1().Pods(testNS).Delete(t.Context(), name+"-pod", metav1.DeleteOptions{})
	f.sync(nodeKey("a")) // Job gone: start the requested run
	if j := f.job(name); j == nil || j.UID == first {
		t.Fatal("the request made while running was lost")
	}
}

func TestDiscoveryCreatesPVs(t *testing.T) {
	f := newFixture(t, map[string]string{config.KeyLabelsForPV: "{team: storage}", config.KeyNodeLabelsForPV: "[zone]",
		config.KeyStorageClassMap: fastClass + `
raw:
  hostDir: /mnt/raw
  fsType: xfs
  blockCleanerCommand: [wipefs]
  selector:
  - matchExpressions: [{key: shared, operator: In, values: ["yes"]}]
`}, newNode("a", map[string]string{"zone": "z1"}), newClass("fast", v1.PersistentVolumeReclaimDelete),
		newClass("blk", v1.PersistentVolumeReclaimRetain), newClass("raw", v1.PersistentVolumeReclaimDelete))
	r := fsReport("a", "vol1")
	r.Classes[1].Volumes = []report.Volume{{Name: "sdb", Kind: report.KindBlock, Capacity: 5<<20 + 7}}
	r.Classes = append(r.Classes, report.Class{Name: "raw", Volumes: []report.Volume{{Name: "nvme1", Kind: report.KindBlock, Capacity: 1 << 30}}})
	before := counterValue(t, metrics.PVsCreated.WithLabelValues("fast"))
	f.discover("a", r)
	pv := f.pv(naming.PVName("a", "/mnt/fast/vol1"))
	if pv == nil {
		t.Fatal("no PV for /mnt/fast/vol1")
	}
	if got := pv.Spec.Capacity[v1.ResourceStorage]; got.Cmp(resource.MustParse("20Gi")) != 0 {
		t.Errorf("capacity = %s, want 20Gi (rounded down)", got.String())
	}
	if *pv.Spec.VolumeMode != v1.PersistentVolumeFilesystem || pv.Spec.Local.Path != "/mnt/fast/vol1" || pv.Spec.Local.FSType != nil {
		t.Errorf("bad source: %+v mode %s", pv.Spec.Local, *pv.Spec.VolumeMode)
	}
	if pv.Spec.StorageClassName != "fast" || pv.Spec.PersistentVolumeReclaimPolicy != v1.PersistentVolumeReclaimDelete ||
		!slices.Equal(pv.Spec.MountOptions, []string{"noatime"}) || pv.Spec.AccessModes[0] != v1.ReadWriteOnce {
		t.Errorf("bad class settings: %+v", pv.Spec)
	}
	term := pv.Spec.NodeAffinity.Required.NodeSelectorTerms[0].MatchExpressions[0]
	if term.Key != v1.LabelHostname || term.Values[0] != "a-host" {
		t.Errorf("affinity must use the hostname label value: %+v", term)
	}
	if pv.Labels["team"] != "storage" || pv.Labels["zone"] != "z1" || pv.Labels[jobs.LabelManagedBy] != jobs.ManagedByValue ||
		pv.Annotations[jobs.AnnProvisionedBy] == "" || pv.Annotations[jobs.AnnHostPath] != "/mnt/fast/vol1" ||
		pv.Annotations[jobs.AnnNode] != "a" || !slices.Contains(pv.Finalizers, jobs.FinalizerPVProtection) {
		t.Errorf("bad provenance: %v %v %v", pv.Labels, pv.Annotations, pv.Finalizers)
	}
	blk := f.pv(naming.PVName("a", "/mnt/blk/sdb"))
	if blk == nil || *blk.Spec.VolumeMode != v1.PersistentVolumeBlock || blk.Spec.PersistentVolumeReclaimPolicy != v1.PersistentVolumeReclaimRetain {
		t.Fatalf("bad block PV: %+v", blk)
	}
	if got := blk.Spec.Capacity[v1.ResourceStorage]; got.Value() != 5<<20 {
		t.Errorf("block capacity = %d, want rounded to MiB", got.Value())
	}
	raw := f.pv(naming.PVName("a", "/mnt/raw/nvme1"))
	if raw == nil || raw.Spec.Local.FSType == nil || *raw.Spec.Local.FSType != "xfs" || *raw.Spec.VolumeMode != v1.PersistentVolumeFilesystem ||
		len(raw.Spec.NodeAffinity.Required.NodeSelectorTerms) != 2 {
		t.Fatalf("bad formatted-device PV: %+v", raw)
	}
	if got := counterValue(t, metrics.PVsCreated.WithLabelValues("fast")) - before; got != 1 {
		t.Errorf("created metric grew by %v", got)
	}
	if f.job(naming.DiscoveryJobName("a")) != nil {
		t.Error("consumed discovery Job was not deleted")
	}
}

// TestSucceededPodIsConsumedBeforeJobCompletes: the report is final once
// the discovery pod Succeeded; PVs do not wait for the Job controller.
func TestSucceededPodIsConsumedBeforeJobCompletes(t *testing.T) {
	f := newFixture(t, nil, newNode("a", nil), newClass("fast", v1.PersistentVolumeReclaimDelete))
	f.c.requestDiscovery("a")
	f.sync(nodeKey("a"))
	name := naming.DiscoveryJobName("a")
	f.finishPod(name, true, mustEncode(t, fsReport("a", "vol1"))...)
	f.sync(nodeKey("a"))
	if f.pv(naming.PVName("a", "/mnt/fast/vol1")) == nil {
		t.Fatal("no PV after the discovery pod succeeded")
	}
	if f.job(name) != nil {
		t.Error("the consumed discovery Job was not deleted")
	}
}

func TestForeignPVOnSamePathIsNotDuplicated(t *testing.T) {
	foreign := &v1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "local-pv-1a2b3c4d"},
		Spec: v1.PersistentVolumeSpec{PersistentVolumeSource: v1.PersistentVolumeSource{Local: &v1.LocalVolumeSource{Path: "/mnt/fast/vol1"}},
			NodeAffinity: &v1.VolumeNodeAffinity{Required: &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{{
				MatchExpressions: []v1.NodeSelectorRequirement{{Key: v1.LabelHostname, Operator: v1.NodeSelectorOpIn, Values: []string{"a-host"}}}}}}}}}
	f := newFixture(t, nil, newNode("a", nil), newClass("fast", v1.PersistentVolumeReclaimDelete), foreign)
	f.discover("a", fsReport("a", "vol1", "vol2"))
	if f.pv(naming.PVName("a", "/mnt/fast/vol1")) != nil {
		t.Fatal("a path published by the upstream provisioner was published again")
	}
	if f.pv(naming.PVName("a", "/mnt/fast/vol2")) == nil {
		t.Fatal("vol2 was not published")
	}
}

func TestReportRejections(t *testing.T) {
	tests := []struct {
		name       string
		report     func() *report.Report
		msgs       []string
		wantEvent  string
		wantMetric string
		wantPV     string
	}{
		{name: "report for another node", report: func() *report.Report { return fsReport("b", "vol1") },
			wantEvent: `report is for node "b"`, wantMetric: "WrongNode"},
		{name: "undecodable report", msgs: []string{"lpv1 j 0 2 0123456789abcdef {", ""},
			wantEvent: "Discovery report rejected", wantMetric: "Undecodable"},
		{name: "volume outside the class directory", report: func() *report.Report { return fsReport("a", "../../etc", "vol2") },
			wantEvent: "InvalidName", wantMetric: "InvalidName", wantPV: "/mnt/fast/vol2"},
		{name: "directory in a block class", report: func() *report.Report {
			r := fsReport("a")
			r.Classes[1].Volumes = []report.Volume{{Name: "x", Kind: report.KindDirectory, Capacity: 1}}
			return r
		}, wantEvent: "WrongKind", wantMetric: "WrongKind"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, nil, newNode("a", nil), newClass("fast", v1.PersistentVolumeReclaimDelete))
			msgs := tc.msgs
			if tc.report != nil {
				msgs = mustEncode(t, tc.report())
			}
			reports := counterValue(t, metrics.RejectedReports.WithLabelValues(tc.wantMetric))
			vols := counterValue(t, metrics.RejectedVolumes.WithLabelValues(tc.wantMetric))
			f.c.requestDiscovery("a")
			f.sync(nodeKey("a"))
			f.finishJob(naming.DiscoveryJobName("a"), true, msgs...)
			f.sync(nodeKey("a"))
			f.wantEvent(tc.wantEvent)
			grew := counterValue(t, metrics.RejectedReports.WithLabelValues(tc.wantMetric)) - reports +
				counterValue(t, metrics.RejectedVolumes.WithLabelValues(tc.wantMetric)) - vols
			if grew != 1 {
				t.Errorf("rejection metric %s grew by %v", tc.wantMetric, grew)
			}
			pvs, _ := f.kube.CoreV1().PersistentVolumes().List(t.Context(), metav1.ListOptions{})
			if tc.wantPV == "" && len(pvs.Items) != 0 || tc.wantPV != "" && (len(pvs.Items) != 1 || pvs.Items[0].Spec.Local.Path != tc.wantPV) {
				t.Errorf("unexpected PVs: %d", len(pvs.Items))
			}
		})
	}
}

func TestMissingStorageClassPublishesNothing(t *testing.T) {
	f := newFixture(t, nil, newNode("a", nil))
	f.discover("a", fsReport("a", "vol1"))
	if f.pv(naming.PVName("a", "/mnt/fast/vol1")) != nil {
		t.Fatal("PV created without its StorageClass")
	}
	f.wantEvent("StorageClassNotFound")
}

func TestMissingHostnameLabel(t *testing.T) {
	n := newNode("a", nil)
	delete(n.Labels, v1.LabelHostname)
	f := newFixture(t, nil, n, newClass("fast", v1.PersistentVolumeReclaimDelete))
	f.discover("a", fsReport("a", "vol1"))
	f.wantEvent("MissingHostnameLabel")
	if f.pv(naming.PVName("a", "/mnt/fast/vol1")) != nil {
		t.Fatal("PV created without a hostname label")
	}
}

func mustEncode(t *testing.T, r *report.Report) []string {
	t.Helper()
	msgs, err := report.Encode(r, 2)
	if err != nil {
		t.Fatal(err)
	}
	return msgs
}

func counterValue(t *testing.T, c compmetrics.CounterMetric) float64 {
	t.Helper()
	metrics.Register()
	v, err := testutil.GetCounterMetricValue(c)
	if err != nil {
		t.Fatal(err)
	}
	return v
}
