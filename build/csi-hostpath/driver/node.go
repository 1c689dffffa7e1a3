package driver

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"golang.org/x/sys/unix"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"k8s.io/klog/v2"
)

// checkTarget accepts only clean absolute paths below the kubelet's pods
// directory, where the kubelet asks for a volume to be published.
func (d *Driver) checkTarget(p string) error {
	pods := filepath.Join(d.cfg.KubeletDir, "pods") + "/"
	switch {
	case p == "":
		return errors.New("target path is missing")
	case !filepath.IsAbs(p) || filepath.Clean(p) != p:
		return fmt.Errorf("target path %q is not a clean absolute path", p)
	case !strings.HasPrefix(p, pods):
		return fmt.Errorf("target path %q is not below the kubelet's pods directory %s", p, pods)
	}
	return nil
}

// NodePublishVolume bind-mounts the volume's directory at the target path.
// A target that is mounted already is published already.
func (d *Driver) NodePublishVolume(ctx context.Context, req *csi.NodePublishVolumeRequest) (*csi.NodePublishVolumeResponse, error) {
	id, target := req.GetVolumeId(), req.GetTargetPath()
	if err := validateID(id); err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	if err := d.checkTarget(target); err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	if err := checkCapability(req.GetVolumeCapability()); err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.vols.hasDir(id) {
		return nil, status.Errorf(codes.NotFound, "volume %s does not exist on node %s", id, d.cfg.NodeID)
	}
	mounted, err := isMountPoint(target)
	if err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	if mounted {
		return &csi.NodePublishVolumeResponse{}, nil
	}
	if err := os.MkdirAll(target, 0o750); err != nil {
		return nil, status.Errorf(codes.Internal, "creating the target path: %v", err)
	}
	ro := req.GetReadonly() || req.GetVolumeCapability().GetAccessMode().GetMode() == csi.VolumeCapability_AccessMode_SINGLE_NODE_READER_ONLY
	if err := bindMount(d.vols.path(id), target, ro); err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	klog.FromContext(ctx).V(2).Info("Volume published", "volumeID", id, "target", target, "readOnly", ro)
	return &csi.NodePublishVolumeResponse{}, nil
}

// NodeUnpublishVolume unmounts the target path and removes it; a target
// that is gone is unpublished already.
func (d *Driver) NodeUnpublishVolume(ctx context.Context, req *csi.NodeUnpublishVolumeRequest) (*csi.NodeUnpublishVolumeResponse, error) {
	id, target := req.GetVolumeId(), req.GetTargetPath()
	if err := validateID(id); err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	if err := d.checkTarget(target); err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := unmountAll(target); err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	if err := os.Remove(target); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, status.Errorf(codes.Internal, "removing the target path: %v", err)
	}
	klog.FromContext(ctx).V(2).Info("Volume unpublished", "volumeID", id, "target", target)
	return &csi.NodeUnpublishVolumeResponse{}, nil
}

// NodeGetInfo returns the node's ID and its topology segment.
func (d *Driver) NodeGetInfo(context.Context, *csi.NodeGetInfoRequest) (*csi.NodeGetInfoResponse, error) {
	return &csi.NodeGetInfoResponse{
		NodeId:             d.cfg.NodeID,
		AccessibleTopology: &csi.Topology{Segments: map[string]string{d.cfg.TopologyKey(): d.cfg.NodeID}},
	}, nil
}

// NodeGetCapabilities: volume stats; no staging.
func (d *Driver) NodeGetCapabilities(context.Context, *csi.NodeGetCapabilitiesRequest) (*csi.NodeGetCapabilitiesResponse, error) {
	return &csi.NodeGetCapabilitiesResponse{Capabilities: []*csi.NodeServiceCapability{{
		Type: &csi.NodeServiceCapability_Rpc{Rpc: &csi.NodeServiceCapability_RPC{Type: csi.NodeServiceCapability_RPC_GET_VOLUME_STATS}},
	}}}, nil
}

// NodeGetVolumeStats reports the bytes and inodes of the file system that
// holds the volume (a directory has no capacity of its own), read at the
// volume path.
func (d *Driver) NodeGetVolumeStats(_ context.Context, req *csi.NodeGetVolumeStatsRequest) (*csi.NodeGetVolumeStatsResponse, error) {
	id, p := req.GetVolumeId(), req.GetVolumePath()
	if err := validateID(id); err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	if p == "" || !filepath.IsAbs(p) {
		return nil, status.Errorf(codes.InvalidArgument, "volume path %q is not an absolute path", p)
	}
	if !d.vols.hasDir(id) {
		return nil, status.Errorf(codes.NotFound, "volume %s does not exist on node %s", id, d.cfg.NodeID)
	}
	var st unix.Statfs_t
	if err := unix.Statfs(p, &st); errors.Is(err, unix.ENOENT) {
		return nil, status.Errorf(codes.NotFound, "volume path %s does not exist", p)
	} else if err != nil {
		return nil, status.Errorf(codes.Internal, "statfs %s: %v", p, err)
	}
	bs := st.Bsize
	return &csi.NodeGetVolumeStatsResponse{Usage: []*csi.VolumeUsage{
		{Unit: csi.VolumeUsage_BYTES, Total: int64(st.Blocks) * bs, Available: int64(st.Bavail) * bs, Used: int64(st.Blocks-st.Bfree) * bs},
		{Unit: csi.VolumeUsage_INODES, Total: int64(st.Files), Available: int64(st.Ffree), Used: int64(st.Files - st.Ffree)},
	}}, nil
}
