package pluginwatcher

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/peer"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"
)

// hostileCount is how many hostile sockets the tests and the benchmark
// create: the target.
const hostileCount = 200

// hostileType is the plugin type a slow GetInfo answerer claims; no
// handler exists for it, so it fails and is retried for ever.
const hostileType = "HostilePlugin"

// hostileClass is one kind of socket that misbehaves on the wire. The
// name is the one used in the issue, the tests and docs/benchmarks.md.
type hostileClass struct {
	name string
	// stalls is true when an attempt on such a socket waits for a timeout
	// (or close to one) instead of failing at once.
	stalls bool
	// slowGetInfo makes the set's gRPC server answer GetInfo late.
	slowGetInfo bool
	// add creates one socket at path that serves plugin name.
	add func(hs *hostileSet, path, name string) error
}

var hostileClasses = []hostileClass{
	{name: "accept-never-answer", stalls: true, add: (*hostileSet).acceptNeverAnswer},
	{name: "http2-handshake-then-stall", stalls: true, add: (*hostileSet).http2ThenStall},
	{name: "getinfo-after-4.9s", stalls: true, slowGetInfo: true, add: (*hostileSet).serveGRPC},
	{name: "stall-on-notify", stalls: true, add: (*hostileSet).serveGRPC},
	{name: "garbage-answer", add: (*hostileSet).garbage},
	{name: "bind-only", add: (*hostileSet).bindOnly},
}

// hostileSet owns the hostile sockets of one test or benchmark run; see
// serveGRPC for what its gRPC server does.
type hostileSet struct {
	registerapi.UnimplementedRegistrationServer
	pluginType string
	slowAnswer time.Duration
	srv        *grpc.Server
	mu         sync.Mutex
	closers    []io.Closer
	names      map[string]string // socket path -> plugin name
	paths      []string
	done       chan struct{}
}

// startHostile creates n sockets of class c named evilNNN.sock in dir. The
// slow GetInfo answerer answers after 98 % of rpcTimeout (4.9 s of the
// default 5 s). Everything is closed when the test ends.
func startHostile(tb testing.TB, c hostileClass, dir, pluginType string, rpcTimeout time.Duration, n int) *hostileSet {
	tb.Helper()
	return startHostileNamed(tb, c, dir, "evil", pluginType, rpcTimeout, n)
}

// startHostileNamed is startHostile with the sockets named
// <prefix>NNN.sock, so that several classes can share one directory.
func startHostileNamed(tb testing.TB, c hostileClass, dir, prefix, pluginType string, rpcTimeout time.Duration, n int) *hostileSet {
	tb.Helper()
	hs := &hostileSet{
		pluginType: pluginType,
		srv:        grpc.NewServer(),
		names:      map[string]string{},
		done:       make(chan struct{}),
	}
	if c.slowGetInfo {
		hs.slowAnswer = rpcTimeout * 98 / 100
	}
	registerapi.RegisterRegistrationServer(hs.srv, hs)
	tb.Cleanup(hs.close)
	for i := range n {
		name := fmt.Sprintf("%s%03d", prefix, i)
		path := filepath.Join(dir, name+".sock")
		if err := c.add(hs, path, name); err != nil {
			tb.Fatalf("creating %s socket %s: %v", c.name, path, err)
		}
		hs.paths = append(hs.paths, path)
	}
	return hs
}

func (hs *hostileSet) close() {
	close(hs.done)
	hs.srv.Stop()
	hs.mu.Lock()
	defer hs.mu.Unlock()
	for _, c := range hs.closers {
		_ = c.Close()
	}
	for _, p := range hs.paths {
		_ = os.Remove(p)
	}
}

func (hs *hostileSet) keep(c io.Closer) {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	hs.closers = append(hs.closers, c)
}

// serveRaw accepts connections on path and hands each to fn.
func (hs *hostileSet) serveRaw(path string, fn func(net.Conn)) error {
	lis, err := net.Listen("unix", path)
	if err != nil {
		return err
	}
	hs.keep(lis)
	go func() {
		for {
			c, err := lis.Accept()
			if err != nil {
				return
			}
			hs.keep(c)
			go fn(c)
		}
	}()
	return nil
}

// acceptNeverAnswer: the connection is accepted and then nothing is ever
// read or written.
func (hs *hostileSet) acceptNeverAnswer(path, _ string) error {
	return hs.serveRaw(path, func(net.Conn) {})
}

// http2ThenStall: the HTTP/2 connection preface and SETTINGS are
// exchanged (so gRPC sees a ready connection), then no stream is ever
// answered.
func (hs *hostileSet) http2ThenStall(path, _ string) error {
	return hs.serveRaw(path, func(c net.Conn) {
		const clientPreface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
		buf := make([]byte, len(clientPreface))
		if _, err := io.ReadFull(c, buf); err != nil || string(buf) != clientPreface {
			return
		}
		if _, err := c.Write(h2Frame(h2Settings, 0)); err != nil {
			return
		}
		ackSettingsForever(c)
	})
}

// HTTP/2 frame types and flags used by http2ThenStall (RFC 9113 §6.5).
const (
	h2Settings  = 0x4
	h2FlagAck   = 0x1
	h2HeaderLen = 9
)

// h2Frame is an empty frame of type typ with flags on stream 0.
func h2Frame(typ, flags byte) []byte {
	return []byte{0, 0, 0, typ, flags, 0, 0, 0, 0}
}

// ackSettingsForever reads frames, acknowledges each SETTINGS frame and
// ignores everything else, until the connection is closed.
func ackSettingsForever(c net.Conn) {
	hdr := make([]byte, h2HeaderLen)
	for {
		if _, err := io.ReadFull(c, hdr); err != nil {
			return
		}
		length := int64(binary.BigEndian.Uint32(append([]byte{0}, hdr[:3]...)))
		if _, err := io.CopyN(io.Discard, c, length); err != nil {
			return
		}
		if hdr[3] == h2Settings && hdr[4]&h2FlagAck == 0 {
			if _, err := c.Write(h2Frame(h2Settings, h2FlagAck)); err != nil {
				return
			}
		}
	}
}

// serveGRPC serves the set's Registration server on path. With
// slowAnswer set (getinfo-after-4.9s) GetInfo answers just within the RPC
// timeout, claiming a type nobody handles; without it (stall-on-notify)
// GetInfo answers at once with a plugin the handler accepts and
// NotifyRegistrationStatus is never answered.
func (hs *hostileSet) serveGRPC(path, name string) error {
	hs.mu.Lock()
	hs.names[path] = name
	hs.mu.Unlock()
	lis, err := net.Listen("unix", path)
	if err != nil {
		return err
	}
	go func() { _ = hs.srv.Serve(lis) }()
	return nil
}

func (hs *hostileSet) GetInfo(ctx context.Context, _ *registerapi.InfoRequest) (*registerapi.PluginInfo, error) {
	p, _ := peer.FromContext(ctx)
	hs.mu.Lock()
	name := hs.names[p.LocalAddr.String()]
	hs.mu.Unlock()
	if hs.slowAnswer == 0 {
		return pluginInfo(hs.pluginType, name), nil
	}
	select {
	case <-time.After(hs.slowAnswer):
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-hs.done:
		return nil, io.EOF
	}
	return pluginInfo(hostileType, name), nil
}

func (hs *hostileSet) NotifyRegistrationStatus(ctx context.Context, _ *registerapi.RegistrationStatus) (*registerapi.RegistrationStatusResponse, error) {
	if hs.slowAnswer > 0 {
		return &registerapi.RegistrationStatusResponse{}, nil
	}
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-hs.done:
		return nil, io.EOF
	}
}

// garbage: every connection is answered with something that is not HTTP/2
// and closed.
func (hs *hostileSet) garbage(path, _ string) error {
	return hs.serveRaw(path, func(c net.Conn) {
		_, _ = c.Write([]byte("HTTP/1.0 400 Bad Request\r\n\r\n\x00\xff garbage"))
		_ = c.Close()
	})
}

// bindOnly: a socket that is bound but never listens; connections are
// refused.
func (hs *hostileSet) bindOnly(path, _ string) error {
	fd, err := syscall.Socket(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	if err := syscall.Bind(fd, &syscall.SockaddrUnix{Name: path}); err != nil {
		_ = syscall.Close(fd)
		return err
	}
	hs.keep(fdCloser(fd))
	return nil
}

type fdCloser int

func (f fdCloser) Close() error { return syscall.Close(int(f)) }
