package driver

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"sync"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"k8s.io/klog/v2"

	"github.com/nodeplug/registrar"
)

// Config is what one node's driver process needs.
type Config struct {
	// Name is the CSI driver name (GetPluginInfo, the CSIDriver object, the
	// StorageClass's provisioner).
	Name string
	// NodeID is the node's name: NodeGetInfo's node ID and the value of
	// the topology segment.
	NodeID string
	// DataDir holds the volumes' directories; it must be the node's own.
	DataDir string
	// KubeletDir is the kubelet's root directory; NodePublishVolume only
	// mounts below its pods/ directory.
	KubeletDir string
	// Endpoint is the path of the CSI socket.
	Endpoint string
	// RegistrationDir is the kubelet's plugin registration directory; empty
	// means the driver does not register itself.
	RegistrationDir string
	// MaxVolumeBytes refuses larger volumes (0: no limit).
	MaxVolumeBytes int64
	// VendorVersion is GetPluginInfo's vendor_version.
	VendorVersion string
}

// driverName is what the CSI spec allows as a driver name (at most 63
// bytes, letters, digits, '-' and '.', starting and ending with a letter or
// digit).
var driverName = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9.-]{0,61}[A-Za-z0-9])?$`)

func (c Config) validate() error {
	var errs []error
	if !driverName.MatchString(c.Name) {
		errs = append(errs, fmt.Errorf("driver name %q is not a CSI driver name (letters, digits, '-' and '.', at most 63 bytes)", c.Name))
	}
	if c.NodeID == "" {
		errs = append(errs, errors.New("node ID is required"))
	}
	for flag, p := range map[string]string{"data dir": c.DataDir, "kubelet dir": c.KubeletDir, "endpoint": c.Endpoint} {
		if !filepath.IsAbs(p) || filepath.Clean(p) != p {
			errs = append(errs, fmt.Errorf("%s %q must be a clean absolute path", flag, p))
		}
	}
	if len(c.Endpoint) > maxSocketPath {
		errs = append(errs, fmt.Errorf("endpoint %q is %d bytes, longer than a unix socket path may be (%d)", c.Endpoint, len(c.Endpoint), maxSocketPath))
	}
	if c.RegistrationDir != "" && !filepath.IsAbs(c.RegistrationDir) {
		errs = append(errs, fmt.Errorf("registration dir %q must be an absolute path", c.RegistrationDir))
	}
	if c.MaxVolumeBytes < 0 {
		errs = append(errs, fmt.Errorf("max volume bytes %d is negative", c.MaxVolumeBytes))
	}
	return errors.Join(errs...)
}

// maxSocketPath is the longest path a unix socket can be bound to on Linux.
const maxSocketPath = 107

// TopologyKey is the key of the topology segment that pins a volume to
// its node.
func (c Config) TopologyKey() string { return "topology." + c.Name + "/node" }

// Driver serves CSI's Identity, Controller and Node services.
type Driver struct {
	csi.UnimplementedIdentityServer
	csi.UnimplementedControllerServer
	csi.UnimplementedNodeServer

	cfg  Config
	vols store
	// mu serialises the calls that change volumes or mounts.
	mu sync.Mutex
}

// New validates cfg and returns a Driver.
func New(cfg Config) (*Driver, error) {
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("invalid driver configuration: %w", err)
	}
	return &Driver{cfg: cfg, vols: store{dir: cfg.DataDir}}, nil
}

// Run serves the CSI socket and registers the driver with the kubelet,
// until ctx ends; then it de-registers and removes the socket.
func (d *Driver) Run(ctx context.Context) error {
	logger := klog.FromContext(ctx)
	if err := os.MkdirAll(d.cfg.DataDir, 0o750); err != nil {
		return fmt.Errorf("creating the data dir: %w", err)
	}
	lis, err := listen(d.cfg.Endpoint)
	if err != nil {
		return err
	}
	srv := grpc.NewServer(grpc.UnaryInterceptor(logCalls))
	csi.RegisterIdentityServer(srv, d)
	csi.RegisterControllerServer(srv, d)
	csi.RegisterNodeServer(srv, d)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(lis) }()
	defer func() { _ = os.Remove(d.cfg.Endpoint) }()
	logger.Info("Serving CSI", "driver", d.cfg.Name, "node", d.cfg.NodeID, "endpoint", d.cfg.Endpoint, "dataDir", d.cfg.DataDir)

	reg, err := d.register(ctx)
	if err != nil {
		srv.Stop()
		return err
	}
	select {
	case <-ctx.Done():
	case err := <-served:
		logger.Error(err, "CSI server stopped")
	}
	if reg != nil {
		reg.Stop()
	}
	srv.GracefulStop()
	return nil
}

// register starts the registration socket, if a directory is configured.
func (d *Driver) register(ctx context.Context) (registrar.Registrar, error) {
	if d.cfg.RegistrationDir == "" {
		return nil, nil
	}
	logger := klog.FromContext(ctx)
	reg, err := registrar.New(registrar.Config{
		Dir: d.cfg.RegistrationDir, Type: "CSIPlugin", Name: d.cfg.Name,
		Endpoint: d.cfg.Endpoint, SupportedVersions: []string{"1.0.0"},
		SocketName: d.cfg.Name + "-reg.sock",
		OnStatus: func(s registrar.Status) {
			if s.Registered {
				logger.Info("Registered with the kubelet", "driver", d.cfg.Name)
				return
			}
			logger.Info("The kubelet refused the registration", "driver", d.cfg.Name, "reason", s.Error)
		},
	})
	if err != nil {
		return nil, fmt.Errorf("registration: %w", err)
	}
	if err := reg.Start(ctx); err != nil {
		return nil, fmt.Errorf("registration: %w", err)
	}
	logger.Info("Registration socket ready", "path", reg.SocketPath())
	return reg, nil
}

// listen binds the CSI socket at path, replacing a socket left by an
// earlier run.
func listen(path string) (net.Listener, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		return nil, fmt.Errorf("creating the socket's directory: %w", err)
	}
	if fi, err := os.Lstat(path); err == nil {
		if fi.Mode()&os.ModeSocket == 0 {
			return nil, fmt.Errorf("%s exists and is not a socket", path)
		}
		if err := os.Remove(path); err != nil {
			return nil, fmt.Errorf("removing the stale socket: %w", err)
		}
	}
	lis, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("binding the CSI socket: %w", err)
	}
	return lis, nil
}

// logCalls logs every call at V(4) and every failed call at V(2).
func logCalls(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	logger := klog.FromContext(ctx)
	logger.V(4).Info("CSI call", "method", info.FullMethod, "request", req)
	resp, err := handler(ctx, req)
	if err != nil {
		logger.V(2).Info("CSI call failed", "method", info.FullMethod, "err", err)
	}
	return resp, err
}
