package driver

import (
	"os"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
)

func TestIdentity(t *testing.T) {
	d := startDriver(t, nil)
	ctx := ctxFor(t)
	info, err := d.id.GetPluginInfo(ctx, &csi.GetPluginInfoRequest{})
	wantCode(t, err, codes.OK)
	if info.GetName() != "hostpath.csi.nodeplug.io" || info.GetVendorVersion() != "test" {
		t.Fatalf("GetPluginInfo = %v", info)
	}
	caps, err := d.id.GetPluginCapabilities(ctx, &csi.GetPluginCapabilitiesRequest{})
	wantCode(t, err, codes.OK)
	got := map[csi.PluginCapability_Service_Type]bool{}
	for _, c := range caps.GetCapabilities() {
		got[c.GetService().GetType()] = true
	}
	if !got[csi.PluginCapability_Service_CONTROLLER_SERVICE] || !got[csi.PluginCapability_Service_VOLUME_ACCESSIBILITY_CONSTRAINTS] {
		t.Fatalf("GetPluginCapabilities = %v", caps)
	}
	probe, err := d.id.Probe(ctx, &csi.ProbeRequest{})
	wantCode(t, err, codes.OK)
	if !probe.GetReady().GetValue() {
		t.Fatalf("Probe = %v, want ready", probe)
	}
	cc, err := d.ctrl.ControllerGetCapabilities(ctx, &csi.ControllerGetCapabilitiesRequest{})
	wantCode(t, err, codes.OK)
	if len(cc.GetCapabilities()) != 1 || cc.GetCapabilities()[0].GetRpc().GetType() != csi.ControllerServiceCapability_RPC_CREATE_DELETE_VOLUME {
		t.Fatalf("ControllerGetCapabilities = %v", cc)
	}
}

func TestCreateDeleteVolume(t *testing.T) {
	d := startDriver(t, nil)
	ctx := ctxFor(t)
	req := &csi.CreateVolumeRequest{
		Name: "pvc-1", VolumeCapabilities: []*csi.VolumeCapability{rwo},
		CapacityRange: &csi.CapacityRange{RequiredBytes: 1 << 30},
		AccessibilityRequirements: &csi.TopologyRequirement{
			Requisite: []*csi.Topology{{Segments: map[string]string{d.cfg.TopologyKey(): "node-2"}}, {Segments: map[string]string{d.cfg.TopologyKey(): "node-1"}}},
		},
	}
	resp, err := d.ctrl.CreateVolume(ctx, req)
	wantCode(t, err, codes.OK)
	v := resp.GetVolume()
	if v.GetVolumeId() != "pvc-1" || v.GetCapacityBytes() != 1<<30 {
		t.Fatalf("CreateVolume = %v", v)
	}
	if seg := v.GetAccessibleTopology()[0].GetSegments(); seg[d.cfg.TopologyKey()] != "node-1" || len(seg) != 1 {
		t.Fatalf("volume topology = %v, want this node only", seg)
	}
	if fi, err := os.Stat(d.cfg.DataDir + "/pvc-1"); err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o777 {
		t.Fatalf("volume directory: %v %v", fi, err)
	}
	// The same request again is the same volume (the provisioner retries).
	again, err := d.ctrl.CreateVolume(ctx, req)
	wantCode(t, err, codes.OK)
	if again.GetVolume().GetVolumeId() != "pvc-1" || again.GetVolume().GetCapacityBytes() != 1<<30 {
		t.Fatalf("CreateVolume again = %v", again)
	}
	// The same name with a size it does not have is a conflict.
	req.CapacityRange = &csi.CapacityRange{RequiredBytes: 2 << 30}
	_, err = d.ctrl.CreateVolume(ctx, req)
	wantCode(t, err, codes.AlreadyExists)

	_, err = d.ctrl.ValidateVolumeCapabilities(ctx, &csi.ValidateVolumeCapabilitiesRequest{VolumeId: "pvc-1", VolumeCapabilities: []*csi.VolumeCapability{rwo}})
	wantCode(t, err, codes.OK)
	_, err = d.ctrl.DeleteVolume(ctx, &csi.DeleteVolumeRequest{VolumeId: "pvc-1"})
	wantCode(t, err, codes.OK)
	if _, err := os.Stat(d.cfg.DataDir + "/pvc-1"); !os.IsNotExist(err) {
		t.Fatalf("volume directory after DeleteVolume: %v", err)
	}
	if _, err := os.Stat(d.cfg.DataDir + "/.pvc-1.json"); !os.IsNotExist(err) {
		t.Fatalf("volume record after DeleteVolume: %v", err)
	}
	// Deleting it again is no error.
	_, err = d.ctrl.DeleteVolume(ctx, &csi.DeleteVolumeRequest{VolumeId: "pvc-1"})
	wantCode(t, err, codes.OK)
	_, err = d.ctrl.ValidateVolumeCapabilities(ctx, &csi.ValidateVolumeCapabilitiesRequest{VolumeId: "pvc-1", VolumeCapabilities: []*csi.VolumeCapability{rwo}})
	wantCode(t, err, codes.NotFound)
}

func TestCreateVolumeRefuses(t *testing.T) {
	d := startDriver(t, func(c *Config) { c.MaxVolumeBytes = 1 << 40 })
	block := &csi.VolumeCapability{
		AccessType: &csi.VolumeCapability_Block{Block: &csi.VolumeCapability_BlockVolume{}},
		AccessMode: &csi.VolumeCapability_AccessMode{Mode: csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER},
	}
	other := &csi.TopologyRequirement{Requisite: []*csi.Topology{{Segments: map[string]string{d.cfg.TopologyKey(): "node-2"}}}}
	cases := map[string]struct {
		edit func(*csi.CreateVolumeRequest)
		want codes.Code
	}{
		"no name":         {edit: func(r *csi.CreateVolumeRequest) { r.Name = "" }, want: codes.InvalidArgument},
		"no capabilities": {edit: func(r *csi.CreateVolumeRequest) { r.VolumeCapabilities = nil }, want: codes.InvalidArgument},
		"nil capability":  {edit: func(r *csi.CreateVolumeRequest) { r.VolumeCapabilities = []*csi.VolumeCapability{nil} }, want: codes.InvalidArgument},
		"block volume":    {edit: func(r *csi.CreateVolumeRequest) { r.VolumeCapabilities = []*csi.VolumeCapability{block} }, want: codes.InvalidArgument},
		"no access type":  {edit: func(r *csi.CreateVolumeRequest) { r.VolumeCapabilities[0].AccessType = nil }, want: codes.InvalidArgument},
		"multi-node access mode": {edit: func(r *csi.CreateVolumeRequest) {
			r.VolumeCapabilities[0].AccessMode.Mode = csi.VolumeCapability_AccessMode_MULTI_NODE_MULTI_WRITER
		}, want: codes.InvalidArgument},
		"unknown access mode": {edit: func(r *csi.CreateVolumeRequest) { r.VolumeCapabilities[0].AccessMode = nil }, want: codes.InvalidArgument},
		"snapshot source": {edit: func(r *csi.CreateVolumeRequest) {
			r.VolumeContentSource = &csi.VolumeContentSource{Type: &csi.VolumeContentSource_Snapshot{Snapshot: &csi.VolumeContentSource_SnapshotSource{SnapshotId: "s"}}}
		}, want: codes.InvalidArgument},
		"unknown parameter":       {edit: func(r *csi.CreateVolumeRequest) { r.Parameters = map[string]string{"type": "ssd"} }, want: codes.InvalidArgument},
		"negative required bytes": {edit: func(r *csi.CreateVolumeRequest) { r.CapacityRange = &csi.CapacityRange{RequiredBytes: -1} }, want: codes.InvalidArgument},
		"negative limit bytes":    {edit: func(r *csi.CreateVolumeRequest) { r.CapacityRange = &csi.CapacityRange{LimitBytes: -1} }, want: codes.InvalidArgument},
		"required above limit": {edit: func(r *csi.CreateVolumeRequest) {
			r.CapacityRange = &csi.CapacityRange{RequiredBytes: 2, LimitBytes: 1}
		}, want: codes.InvalidArgument},
		"above the driver's limit": {edit: func(r *csi.CreateVolumeRequest) { r.CapacityRange = &csi.CapacityRange{RequiredBytes: 1<<40 + 1} }, want: codes.OutOfRange},
		"another node's topology":  {edit: func(r *csi.CreateVolumeRequest) { r.AccessibilityRequirements = other }, want: codes.ResourceExhausted},
		"another node preferred": {edit: func(r *csi.CreateVolumeRequest) {
			r.AccessibilityRequirements = &csi.TopologyRequirement{Preferred: other.Requisite}
		}, want: codes.ResourceExhausted},
		"topology without our key": {edit: func(r *csi.CreateVolumeRequest) {
			r.AccessibilityRequirements = &csi.TopologyRequirement{Requisite: []*csi.Topology{{Segments: map[string]string{"zone": "a"}}}}
		}, want: codes.ResourceExhausted},
		"good request (control)": {edit: func(*csi.CreateVolumeRequest) {}, want: codes.OK},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			req := &csi.CreateVolumeRequest{Name: "pvc-refused", VolumeCapabilities: []*csi.VolumeCapability{mountCap(csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER)}}
			tc.edit(req)
			_, err := d.ctrl.CreateVolume(ctxFor(t), req)
			wantCode(t, err, tc.want)
			if tc.want != codes.OK {
				if _, err := os.Stat(d.cfg.DataDir + "/pvc-refused"); !os.IsNotExist(err) {
					t.Fatalf("a refused request left a volume directory: %v", err)
				}
			}
			_, _ = d.ctrl.DeleteVolume(ctxFor(t), &csi.DeleteVolumeRequest{VolumeId: "pvc-refused"})
		})
	}
}

// TestBadVolumeIDs sends IDs that would escape the data directory to every
// call that takes one; each is refused before it touches a file.
func TestBadVolumeIDs(t *testing.T) {
	d := startDriver(t, nil)
	// A file outside the data dir that an escaping ID would name.
	victim := d.cfg.DataDir + "/../victim"
	if err := os.MkdirAll(victim, 0o755); err != nil {
		t.Fatal(err)
	}
	target := d.cfg.KubeletDir + "/pods/uid/volumes/kubernetes.io~csi/pv/mount"
	ids := map[string]string{
		"empty": "", "dot dot": "..", "parent escape": "../victim", "absolute": victim,
		"subdirectory": "a/b", "hidden record": ".pvc-1.json", "NUL byte": "pvc\x00x",
	}
	for name, id := range ids {
		t.Run(name, func(t *testing.T) {
			ctx := ctxFor(t)
			_, err := d.ctrl.DeleteVolume(ctx, &csi.DeleteVolumeRequest{VolumeId: id})
			wantCode(t, err, codes.InvalidArgument)
			_, err = d.ctrl.ValidateVolumeCapabilities(ctx, &csi.ValidateVolumeCapabilitiesRequest{VolumeId: id, VolumeCapabilities: []*csi.VolumeCapability{rwo}})
			wantCode(t, err, codes.InvalidArgument)
			_, err = d.node.NodePublishVolume(ctx, &csi.NodePublishVolumeRequest{VolumeId: id, TargetPath: target, VolumeCapability: rwo})
			wantCode(t, err, codes.InvalidArgument)
			_, err = d.node.NodeUnpublishVolume(ctx, &csi.NodeUnpublishVolumeRequest{VolumeId: id, TargetPath: target})
			wantCode(t, err, codes.InvalidArgument)
			_, err = d.node.NodeGetVolumeStats(ctx, &csi.NodeGetVolumeStatsRequest{VolumeId: id, VolumePath: target})
			wantCode(t, err, codes.InvalidArgument)
		})
	}
	if _, err := os.Stat(victim); err != nil {
		t.Fatalf("the directory outside the data dir is gone: %v", err)
	}
}
