package registrar

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync"
	"time"

	"google.golang.org/grpc"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"
)

// Config describes the plugin to register.
type Config struct {
	// Dir is the kubelet's registration directory (required, absolute),
	// e.g. the directory given to nodeplug's
	// --experimental-plugin-registration-dir.
	Dir string
	// Type is PluginInfo.type, e.g. "CSIPlugin", "DevicePlugin" or a
	// nodeplug type such as "nodeplug.io/MountUtility" (required).
	Type string
	// Name is PluginInfo.name (required). It is also written into the
	// socket file name.
	Name string
	// Endpoint is PluginInfo.endpoint: where the kubelet reaches the
	// plugin's own service. Empty means the registration socket itself;
	// use RegisterServices to serve the plugin's service there.
	Endpoint string
	// SupportedVersions is PluginInfo.supported_versions (required); the
	// kubelet picks one or rejects the plugin with a reason.
	SupportedVersions []string
	// SocketName overrides the socket file name (default:
	// SocketName(Name, start time)). It must keep the plugin name as its
	// prefix, followed by '.', '-' or '_', or the kubelet may reject it.
	SocketName string
	// RegisterServices, if set, registers further gRPC services on the
	// registration socket's server before it starts serving.
	RegisterServices func(*grpc.Server)
	// OnStatus, if set, is called with every registration status the
	// kubelet sends.
	OnStatus func(Status)
}

// Status is a registration verdict from the kubelet.
type Status struct {
	Registered bool
	// Error explains a refusal; empty when Registered.
	Error string
	// At is when the status arrived.
	At time.Time
}

// Registrar serves the registration service for one plugin.
type Registrar interface {
	// Start binds the socket and serves until ctx ends or Stop is called.
	// The socket is visible in Dir when Start returns.
	Start(ctx context.Context) error
	// SocketPath is the registration socket's path.
	SocketPath() string
	// Status returns the latest status, if any arrived.
	Status() (Status, bool)
	// WaitForStatus blocks until a status arrives (or returns the latest).
	WaitForStatus(ctx context.Context) (Status, error)
	// Stop stops serving and removes the socket, de-registering the plugin.
	Stop()
}

type registrar struct {
	registerapi.UnimplementedRegistrationServer
	cfg  Config
	path string

	mu      sync.Mutex
	status  *Status
	arrived chan struct{}
	srv     *grpc.Server
	done    chan struct{}
}

var _ Registrar = &registrar{}

// New validates cfg and returns a Registrar.
func New(cfg Config) (Registrar, error) {
	if err := validate(cfg); err != nil {
		return nil, err
	}
	name := cfg.SocketName
	if name == "" {
		name = SocketName(cfg.Name, time.Now())
	}
	path := filepath.Join(cfg.Dir, name)
	if len(path) > maxSocketPath {
		return nil, fmt.Errorf("socket path %q is %d bytes, longer than the unix limit of %d", path, len(path), maxSocketPath)
	}
	return &registrar{cfg: cfg, path: path, arrived: make(chan struct{}), done: make(chan struct{})}, nil
}

func validate(cfg Config) error {
	var errs []error
	if !filepath.IsAbs(cfg.Dir) {
		errs = append(errs, fmt.Errorf("registration directory %q must be an absolute path", cfg.Dir))
	}
	if cfg.Type == "" {
		errs = append(errs, errors.New("plugin type is required"))
	}
	if cfg.Name == "" {
		errs = append(errs, errors.New("plugin name is required"))
	}
	if len(cfg.SupportedVersions) == 0 {
		errs = append(errs, errors.New("at least one supported version is required"))
	}
	if cfg.SocketName != "" && (filepath.Base(cfg.SocketName) != cfg.SocketName || cfg.SocketName[0] == '.') {
		errs = append(errs, fmt.Errorf("socket name %q must be a plain file name not starting with '.'", cfg.SocketName))
	}
	return errors.Join(errs...)
}

func (r *registrar) SocketPath() string { return r.path }

func (r *registrar) Start(ctx context.Context) error {
	lis, err := r.listen()
	if err != nil {
		return err
	}
	srv := grpc.NewServer()
	registerapi.RegisterRegistrationServer(srv, r)
	if r.cfg.RegisterServices != nil {
		r.cfg.RegisterServices(srv)
	}
	r.mu.Lock()
	r.srv = srv
	r.mu.Unlock()
	go func() { _ = srv.Serve(lis) }()
	go func() {
		select {
		case <-ctx.Done():
			r.Stop()
		case <-r.done:
		}
	}()
	return nil
}

// listen binds a hidden temporary name (which watchers ignore), and renames
// it into place once it accepts connections, so that the kubelet never
// sees a socket that refuses.
func (r *registrar) listen() (net.Listener, error) {
	if err := os.MkdirAll(r.cfg.Dir, 0o750); err != nil {
		return nil, fmt.Errorf("creating registration directory: %w", err)
	}
	if err := removeStaleSocket(r.path); err != nil {
		return nil, err
	}
	tmp := filepath.Join(r.cfg.Dir, fmt.Sprintf(".%d.tmp", time.Now().UnixNano()))
	lis, err := net.ListenUnix("unix", &net.UnixAddr{Name: tmp, Net: "unix"})
	if err != nil {
		return nil, fmt.Errorf("binding registration socket: %w", err)
	}
	lis.SetUnlinkOnClose(false)
	if err := os.Rename(tmp, r.path); err != nil {
		_ = lis.Close()
		_ = os.Remove(tmp)
		return nil, fmt.Errorf("moving registration socket into place: %w", err)
	}
	return lis, nil
}

// removeStaleSocket removes a socket left at path by an earlier run; any
// other kind of file there is an error.
func removeStaleSocket(path string) error {
	fi, err := os.Lstat(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil
	case err != nil:
		return fmt.Errorf("checking %s: %w", path, err)
	case fi.Mode()&os.ModeSocket == 0:
		return fmt.Errorf("%s exists and is not a socket", path)
	}
	if err := os.Remove(path); err != nil {
		return fmt.Errorf("removing stale socket %s: %w", path, err)
	}
	return nil
}

func (r *registrar) Stop() {
	r.mu.Lock()
	srv := r.srv
	r.srv = nil
	r.mu.Unlock()
	if srv == nil {
		return
	}
	close(r.done)
	// Remove the socket first: the kubelet de-registers on its removal.
	_ = os.Remove(r.path)
	srv.Stop()
}

// GetInfo implements the Registration service.
func (r *registrar) GetInfo(context.Context, *registerapi.InfoRequest) (*registerapi.PluginInfo, error) {
	return &registerapi.PluginInfo{
		Type:              r.cfg.Type,
		Name:              r.cfg.Name,
		Endpoint:          r.cfg.Endpoint,
		SupportedVersions: r.cfg.SupportedVersions,
	}, nil
}

// NotifyRegistrationStatus implements the Registration service. It always
// answers success: the status is information, not a request.
func (r *registrar) NotifyRegistrationStatus(_ context.Context, s *registerapi.RegistrationStatus) (*registerapi.RegistrationStatusResponse, error) {
	st := Status{Registered: s.PluginRegistered, Error: s.Error, At: time.Now()}
	r.mu.Lock()
	first := r.status == nil
	r.status = &st
	r.mu.Unlock()
	if first {
		close(r.arrived)
	}
	if r.cfg.OnStatus != nil {
		r.cfg.OnStatus(st)
	}
	return &registerapi.RegistrationStatusResponse{}, nil
}

func (r *registrar) Status() (Status, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.status == nil {
		return Status{}, false
	}
	return *r.status, true
}

func (r *registrar) WaitForStatus(ctx context.Context) (Status, error) {
	select {
	case <-r.arrived:
		s, _ := r.Status()
		return s, nil
	case <-ctx.Done():
		return Status{}, fmt.Errorf("waiting for registration status of %s: %w", r.cfg.Name, ctx.Err())
	}
}
