//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"golang.org/x/sys/unix"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/nodeplug/nodeplug/test/e2e/framework"
	"github.com/nodeplug/registrar"
)

const (
	csiDriverName = "e2e.nodeplug.io"
	csiGreeting   = "hello from csi"
)

// csiDriver is the smallest CSI node plugin the kubelet accepts: Identity,
// NodeGetInfo, NodeGetCapabilities (no staging), and NodePublishVolume /
// NodeUnpublishVolume, which mount a small tmpfs holding one file at the
// target path. Its Registration service and its CSI services share one
// socket, served by nodeplug's registrar library.
type csiDriver struct {
	csi.UnimplementedIdentityServer
	csi.UnimplementedNodeServer
	node string
}

// startCSIDriver runs the driver on node n, as a node plugin's container
// would: a process in the node's mount and network namespaces (this test
// binary again, see TestMain), serving its socket in dir, the registration
// directory as the node sees it. The returned func stops it, which removes
// the socket; it is also stopped when t ends.
func startCSIDriver(t testing.TB, n *framework.Node, dir string) (stop func()) {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return n.StartProcess(t, self, []string{"-test.run=^$"}, helperEnv+"="+helperCSIDriver,
		"E2E_CSI_DIR="+dir, "E2E_CSI_NODE="+n.Name)
}

// runCSIDriver is the driver process: it serves until SIGTERM, then
// removes its socket.
func runCSIDriver() error {
	d := &csiDriver{node: os.Getenv("E2E_CSI_NODE")}
	r, err := registrar.New(registrar.Config{
		Dir: os.Getenv("E2E_CSI_DIR"), Type: "CSIPlugin", Name: csiDriverName, SupportedVersions: []string{"1.0.0"},
		SocketName: csiDriverName + ".sock",
		RegisterServices: func(s *grpc.Server) {
			csi.RegisterIdentityServer(s, d)
			csi.RegisterNodeServer(s, d)
		},
		OnStatus: func(s registrar.Status) { fmt.Printf("registration status: %+v\n", s) },
	})
	if err != nil {
		return err
	}
	ctx, cancel := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer cancel()
	if err := r.Start(ctx); err != nil {
		return err
	}
	<-ctx.Done()
	r.Stop()
	return nil
}

func (d *csiDriver) GetPluginInfo(context.Context, *csi.GetPluginInfoRequest) (*csi.GetPluginInfoResponse, error) {
	return &csi.GetPluginInfoResponse{Name: csiDriverName, VendorVersion: "0.0.1"}, nil
}

func (d *csiDriver) GetPluginCapabilities(context.Context, *csi.GetPluginCapabilitiesRequest) (*csi.GetPluginCapabilitiesResponse, error) {
	return &csi.GetPluginCapabilitiesResponse{}, nil
}

func (d *csiDriver) Probe(context.Context, *csi.ProbeRequest) (*csi.ProbeResponse, error) {
	return &csi.ProbeResponse{}, nil
}

func (d *csiDriver) NodeGetInfo(context.Context, *csi.NodeGetInfoRequest) (*csi.NodeGetInfoResponse, error) {
	return &csi.NodeGetInfoResponse{NodeId: d.node}, nil
}

func (d *csiDriver) NodeGetCapabilities(context.Context, *csi.NodeGetCapabilitiesRequest) (*csi.NodeGetCapabilitiesResponse, error) {
	return &csi.NodeGetCapabilitiesResponse{}, nil
}

func (d *csiDriver) NodePublishVolume(_ context.Context, req *csi.NodePublishVolumeRequest) (*csi.NodePublishVolumeResponse, error) {
	target := req.GetTargetPath()
	if target == "" {
		return nil, status.Error(codes.InvalidArgument, "no target path")
	}
	if err := os.MkdirAll(target, 0o750); err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	if err := unix.Mount("e2e-csi", target, "tmpfs", 0, "size=1m"); err != nil {
		return nil, status.Errorf(codes.Internal, "mount tmpfs at %s: %v", target, err)
	}
	if err := os.WriteFile(filepath.Join(target, "hello"), []byte(csiGreeting+"\n"), 0o644); err != nil {
		_ = unix.Unmount(target, 0)
		return nil, status.Error(codes.Internal, err.Error())
	}
	return &csi.NodePublishVolumeResponse{}, nil
}

func (d *csiDriver) NodeUnpublishVolume(_ context.Context, req *csi.NodeUnpublishVolumeRequest) (*csi.NodeUnpublishVolumeResponse, error) {
	target := req.GetTargetPath()
	if err := unix.Unmount(target, 0); err != nil && err != unix.EINVAL && err != unix.ENOENT {
		return nil, status.Errorf(codes.Internal, "unmount %s: %v", target, err)
	}
	if err := os.Remove(target); err != nil && !os.IsNotExist(err) {
		return nil, status.Error(codes.Internal, err.Error())
	}
	return &csi.NodeUnpublishVolumeResponse{}, nil
}
