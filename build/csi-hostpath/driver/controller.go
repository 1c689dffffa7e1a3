package driver

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"k8s.io/klog/v2"
)

// singleNode are the access modes the driver serves: its volumes live on
// one node.
var singleNode = map[csi.VolumeCapability_AccessMode_Mode]bool{
	csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER:        true,
	csi.VolumeCapability_AccessMode_SINGLE_NODE_READER_ONLY:   true,
	csi.VolumeCapability_AccessMode_SINGLE_NODE_SINGLE_WRITER: true,
	csi.VolumeCapability_AccessMode_SINGLE_NODE_MULTI_WRITER:  true,
}

// checkCapability accepts file system volumes with a single-node access
// mode; block volumes are not served.
func checkCapability(c *csi.VolumeCapability) error {
	switch {
	case c == nil:
		return fmt.Errorf("volume capability is missing")
	case c.GetBlock() != nil:
		return fmt.Errorf("block volumes are not supported, only file system (mount) volumes")
	case c.GetMount() == nil:
		return fmt.Errorf("volume capability has no access type (mount)")
	case !singleNode[c.GetAccessMode().GetMode()]:
		return fmt.Errorf("access mode %s is not supported: a volume is a directory on one node", c.GetAccessMode().GetMode())
	}
	return nil
}

func checkCapabilities(cs []*csi.VolumeCapability) error {
	if len(cs) == 0 {
		return fmt.Errorf("volume capabilities are missing")
	}
	for _, c := range cs {
		if err := checkCapability(c); err != nil {
			return err
		}
	}
	return nil
}

// capacity returns the size to record for a request: the required bytes,
// else the limit, else 0 (unknown). A directory has no size of its own.
func (d *Driver) capacity(r *csi.CapacityRange) (int64, error) {
	req, lim := r.GetRequiredBytes(), r.GetLimitBytes()
	switch {
	case req < 0 || lim < 0:
		return 0, status.Errorf(codes.InvalidArgument, "capacity range %d..%d is negative", req, lim)
	case lim > 0 && req > lim:
		return 0, status.Errorf(codes.InvalidArgument, "required bytes %d exceed the limit %d", req, lim)
	case d.cfg.MaxVolumeBytes > 0 && req > d.cfg.MaxVolumeBytes:
		return 0, status.Errorf(codes.OutOfRange, "required bytes %d exceed the driver's maximum of %d", req, d.cfg.MaxVolumeBytes)
	case req > 0:
		return req, nil
	}
	return lim, nil
}

// fits reports whether a volume of size capacity satisfies r.
func fits(capacity int64, r *csi.CapacityRange) bool {
	lim := r.GetLimitBytes()
	return capacity >= r.GetRequiredBytes() && (lim == 0 || capacity <= lim)
}

// checkTopology fails unless this node satisfies the requirement (a
// requirement without segments is satisfied by any node).
func (d *Driver) checkTopology(req *csi.TopologyRequirement) error {
	all := append(append([]*csi.Topology{}, req.GetRequisite()...), req.GetPreferred()...)
	if len(all) == 0 {
		return nil
	}
	for _, t := range all {
		if t.GetSegments()[d.cfg.TopologyKey()] == d.cfg.NodeID {
			return nil
		}
	}
	return status.Errorf(codes.ResourceExhausted, "volume must be accessible from other nodes than %s, which holds it; use volumeBindingMode WaitForFirstConsumer and external-provisioner's --node-deployment", d.cfg.NodeID)
}

// CreateVolume makes a directory for the volume on this node.
func (d *Driver) CreateVolume(ctx context.Context, req *csi.CreateVolumeRequest) (*csi.CreateVolumeResponse, error) {
	if req.GetName() == "" {
		return nil, status.Error(codes.InvalidArgument, "volume name is missing")
	}
	if err := checkCapabilities(req.GetVolumeCapabilities()); err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	if req.GetVolumeContentSource() != nil {
		return nil, status.Error(codes.InvalidArgument, "volume content sources (snapshots, clones) are not supported")
	}
	if len(req.GetParameters()) > 0 {
		keys := make([]string, 0, len(req.GetParameters()))
		for k := range req.GetParameters() {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		return nil, status.Errorf(codes.InvalidArgument, "unknown StorageClass parameters %s: the driver takes none", strings.Join(keys, ", "))
	}
	size, err := d.capacity(req.GetCapacityRange())
	if err != nil {
		return nil, err
	}
	if err := d.checkTopology(req.GetAccessibilityRequirements()); err != nil {
		return nil, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	v := volume{ID: idForName(req.GetName()), Name: req.GetName(), CapacityBytes: size}
	old, ok, err := d.vols.get(v.ID)
	switch {
	case err != nil:
		return nil, status.Error(codes.Internal, err.Error())
	case ok && old.Name != v.Name:
		return nil, status.Errorf(codes.AlreadyExists, "volume ID %s is taken by volume %q", v.ID, old.Name)
	case ok && !fits(old.CapacityBytes, req.GetCapacityRange()):
		return nil, status.Errorf(codes.AlreadyExists, "volume %q exists with %d bytes, which does not fit the requested range", v.Name, old.CapacityBytes)
	case ok:
		v = old
	}
	if err := d.vols.create(v); err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	klog.FromContext(ctx).V(2).Info("Volume created", "name", v.Name, "volumeID", v.ID, "bytes", v.CapacityBytes)
	return &csi.CreateVolumeResponse{Volume: &csi.Volume{
		VolumeId:           v.ID,
		CapacityBytes:      v.CapacityBytes,
		AccessibleTopology: []*csi.Topology{{Segments: map[string]string{d.cfg.TopologyKey(): d.cfg.NodeID}}},
	}}, nil
}

// DeleteVolume removes the volume's directory and content; a volume that
// does not exist is deleted already.
func (d *Driver) DeleteVolume(ctx context.Context, req *csi.DeleteVolumeRequest) (*csi.DeleteVolumeResponse, error) {
	if err := validateID(req.GetVolumeId()); err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.vols.delete(ctx, req.GetVolumeId()); err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	klog.FromContext(ctx).V(2).Info("Volume deleted", "volumeID", req.GetVolumeId())
	return &csi.DeleteVolumeResponse{}, nil
}

// ValidateVolumeCapabilities confirms the capabilities the driver serves.
func (d *Driver) ValidateVolumeCapabilities(_ context.Context, req *csi.ValidateVolumeCapabilitiesRequest) (*csi.ValidateVolumeCapabilitiesResponse, error) {
	if err := validateID(req.GetVolumeId()); err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	if len(req.GetVolumeCapabilities()) == 0 {
		return nil, status.Error(codes.InvalidArgument, "volume capabilities are missing")
	}
	if _, ok, err := d.vols.get(req.GetVolumeId()); err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	} else if !ok {
		return nil, status.Errorf(codes.NotFound, "volume %s does not exist on node %s", req.GetVolumeId(), d.cfg.NodeID)
	}
	if err := checkCapabilities(req.GetVolumeCapabilities()); err != nil {
		return &csi.ValidateVolumeCapabilitiesResponse{Message: err.Error()}, nil
	}
	return &csi.ValidateVolumeCapabilitiesResponse{Confirmed: &csi.ValidateVolumeCapabilitiesResponse_Confirmed{
		VolumeContext: req.GetVolumeContext(), VolumeCapabilities: req.GetVolumeCapabilities(), Parameters: req.GetParameters(),
	}}, nil
}

// ControllerGetCapabilities: volumes are created and deleted, nothing more
// (no attach: the CSIDriver object says attachRequired false).
func (d *Driver) ControllerGetCapabilities(context.Context, *csi.ControllerGetCapabilitiesRequest) (*csi.ControllerGetCapabilitiesResponse, error) {
	return &csi.ControllerGetCapabilitiesResponse{Capabilities: []*csi.ControllerServiceCapability{{
		Type: &csi.ControllerServiceCapability_Rpc{Rpc: &csi.ControllerServiceCapability_RPC{Type: csi.ControllerServiceCapability_RPC_CREATE_DELETE_VOLUME}},
	}}}, nil
}
