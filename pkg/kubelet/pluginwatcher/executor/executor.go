package executor

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"

	"github.com/nodeplug/nodeplug/pkg/kubelet/pluginwatcher/socket"
)

var (
	// ErrRefused: nothing listens on the socket (ECONNREFUSED).
	ErrRefused = errors.New("connection refused")
	// ErrGone: the socket file disappeared or is no longer a socket.
	ErrGone = errors.New("socket is gone")
)

// Conn is an open Registration client for one socket. The zero value is a
// connection that was never opened; closing it does nothing.
type Conn struct {
	cc     *grpc.ClientConn
	client registerapi.RegistrationClient
	// keep is set when a monitor took the connection over; Close then
	// leaves it open.
	keep bool
}

// Close closes the connection unless a monitor owns it.
func (c *Conn) Close() {
	if c != nil && !c.keep {
		c.closeNow()
	}
}

// Keep hands the connection over to a Monitor: Close leaves it open from
// now on. Every Monitor's Watch calls it.
func (c *Conn) Keep() { c.keep = true }

func (c *Conn) closeNow() {
	if c != nil && c.cc != nil {
		_ = c.cc.Close()
	}
}

// Executor performs the side effects of registration: the gRPC calls to
// plugins and the removal of stale socket files. Every call is bounded by a
// timeout.
type Executor interface {
	// Probe connects to path and calls GetInfo. The returned connection must
	// be closed by the caller. Errors wrap ErrRefused or ErrGone when the
	// socket has no listener or no longer exists.
	Probe(ctx context.Context, path string) (*registerapi.PluginInfo, *Conn, error)
	// Notify sends NotifyRegistrationStatus.
	Notify(ctx context.Context, c *Conn, registered bool, reason string) error
	// RemoveStale deletes path if it is still the socket identified by id.
	RemoveStale(path string, id socket.ID) (bool, error)
}

type executor struct {
	dialTimeout time.Duration
	rpcTimeout  time.Duration
}

var _ Executor = &executor{}

// New returns the Executor that dials unix sockets within dialTimeout and
// bounds each RPC by rpcTimeout.
func New(dialTimeout, rpcTimeout time.Duration) Executor {
	return &executor{dialTimeout: dialTimeout, rpcTimeout: rpcTimeout}
}

func (e *executor) Probe(ctx context.Context, path string) (*registerapi.PluginInfo, *Conn, error) {
	c, err := e.connect(ctx, path)
	if err != nil {
		return nil, nil, err
	}
	rctx, cancel := context.WithTimeout(ctx, e.rpcTimeout)
	defer cancel()
	info, err := c.client.GetInfo(rctx, &registerapi.InfoRequest{})
	if err != nil {
		c.Close()
		return nil, nil, fmt.Errorf("GetInfo on %s: %w", path, err)
	}
	return info, c, nil
}

// connect dials the socket itself, so that "refused" and "gone" are told
// apart from a slow or non-gRPC listener, and hands the connection to gRPC.
func (e *executor) connect(ctx context.Context, path string) (*Conn, error) {
	d := net.Dialer{Timeout: e.dialTimeout}
	raw, err := d.DialContext(ctx, "unix", path)
	if err != nil {
		return nil, classifyDialError(path, err)
	}
	var once sync.Once
	dialer := func(ctx context.Context, addr string) (net.Conn, error) {
		var conn net.Conn
		once.Do(func() { conn = raw })
		if conn != nil {
			return conn, nil
		}
		return d.DialContext(ctx, "unix", path)
	}
	cc, err := grpc.NewClient("passthrough:///"+path,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithAuthority("localhost"),
		grpc.WithContextDialer(dialer),
	)
	if err != nil {
		_ = raw.Close()
		return nil, fmt.Errorf("creating gRPC client for %s: %w", path, err)
	}
	return &Conn{cc: cc, client: registerapi.NewRegistrationClient(cc)}, nil
}

func classifyDialError(path string, err error) error {
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return fmt.Errorf("dial %s: %w: %w", path, ErrRefused, err)
	case errors.Is(err, syscall.ENOENT), errors.Is(err, syscall.ENOTSOCK):
		return fmt.Errorf("dial %s: %w: %w", path, ErrGone, err)
	default:
		return fmt.Errorf("dial %s: %w", path, err)
	}
}

func (e *executor) Notify(ctx context.Context, c *Conn, registered bool, reason string) error {
	rctx, cancel := context.WithTimeout(ctx, e.rpcTimeout)
	defer cancel()
	_, err := c.client.NotifyRegistrationStatus(rctx, &registerapi.RegistrationStatus{
		PluginRegistered: registered,
		Error:            reason,
	})
	if err != nil {
		return fmt.Errorf("NotifyRegistrationStatus(registered=%t): %w", registered, err)
	}
	return nil
}

func (e *executor) RemoveStale(path string, id socket.ID) (bool, error) {
	cur, isSock, err := socket.Lstat(path)
	if err != nil || !isSock || cur != id {
		// Already gone or replaced by a newer socket: nothing to remove.
		return false, nil
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return false, fmt.Errorf("removing stale socket %s: %w", path, err)
	}
	return true, nil
}
