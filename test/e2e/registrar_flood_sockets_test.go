//go:build e2e

package e2e

import (
	"fmt"
	"net"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// The hostile flood of issue 28's measurement, as the kubelet meets it in
// its plugin registration directory: sockets that accept and never
// answer, sockets that answer garbage and hang up, and a plugin that binds
// 1,000 sockets a second and keeps only the newest few.
const (
	floodMute    = 200
	floodGarbage = 50
	// floodChurnLive is how many of the churning sockets exist at once.
	floodChurnLive = 10
)

// socketFlood is a running flood in one directory; stop ends it and
// removes every socket it made.
type socketFlood struct {
	dir     string
	mu      sync.Mutex
	lis     []net.Listener
	conns   []net.Conn
	stopped chan struct{}
	wg      sync.WaitGroup
	binds   int
}

// startSocketFlood starts the flood in dir (a path on the host); it stops
// when tb ends at the latest.
func startSocketFlood(tb testing.TB, dir string) *socketFlood {
	tb.Helper()
	f := &socketFlood{dir: dir, stopped: make(chan struct{})}
	tb.Cleanup(f.stop)
	for i := range floodMute {
		if err := f.serve(fmt.Sprintf("mute-%d.sock", i), f.hold); err != nil {
			tb.Fatal(err)
		}
	}
	for i := range floodGarbage {
		if err := f.serve(fmt.Sprintf("junk-%d.sock", i), answerGarbage); err != nil {
			tb.Fatal(err)
		}
	}
	f.wg.Add(1)
	go func() { defer f.wg.Done(); f.churn(tb) }()
	return f
}

// serve listens on name in the flood's directory and hands every
// connection to handle.
func (f *socketFlood) serve(name string, handle func(net.Conn)) error {
	lis, err := net.Listen("unix", filepath.Join(f.dir, name))
	if err != nil {
		return fmt.Errorf("flood socket: %w", err)
	}
	f.mu.Lock()
	f.lis = append(f.lis, lis)
	f.mu.Unlock()
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		for {
			c, err := lis.Accept()
			if err != nil {
				return
			}
			handle(c)
		}
	}()
	return nil
}

// hold keeps a connection open and silent until the flood stops.
func (f *socketFlood) hold(c net.Conn) {
	f.mu.Lock()
	defer f.mu.Unlock()
	select {
	case <-f.stopped:
		_ = c.Close()
	default:
		f.conns = append(f.conns, c)
	}
}

// answerGarbage writes something that is not HTTP/2 and hangs up.
func answerGarbage(c net.Conn) {
	_ = c.SetWriteDeadline(time.Now().Add(time.Second))
	_, _ = c.Write([]byte("HTTP/1.0 400 Bad Request\r\n\r\n\x00\xff not a plugin"))
	_ = c.Close()
}

// churn binds a new socket every millisecond (catching up on late ticks
// to hold 1,000 a second) and closes, which removes, the oldest beyond
// floodChurnLive. The sockets listen but never accept.
func (f *socketFlood) churn(tb testing.TB) {
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	var live []net.Listener
	defer func() {
		for _, l := range live {
			_ = l.Close()
		}
	}()
	begin := time.Now()
	for {
		select {
		case <-f.stopped:
			return
		case <-tick.C:
		}
		for due := int(time.Since(begin) / time.Millisecond); f.binds < due; f.binds++ {
			l, err := net.Listen("unix", filepath.Join(f.dir, fmt.Sprintf("churn-%d.sock", f.binds)))
			if err != nil {
				tb.Errorf("flood churn: %v", err)
				return
			}
			live = append(live, l)
			if len(live) > floodChurnLive {
				_ = live[0].Close()
				live = live[1:]
			}
		}
	}
}

// stop ends the flood and removes its sockets; it returns once every
// goroutine of the flood has ended. It may be called more than once.
func (f *socketFlood) stop() {
	f.mu.Lock()
	select {
	case <-f.stopped:
		f.mu.Unlock()
		return
	default:
	}
	close(f.stopped)
	// Close errors do not matter: each closed listener has removed its
	// socket, and the test is done with the connections.
	for _, l := range f.lis {
		_ = l.Close()
	}
	for _, c := range f.conns {
		_ = c.Close()
	}
	f.mu.Unlock()
	f.wg.Wait()
}

// bindRate is the churn's binds per second over d.
func (f *socketFlood) bindRate(d time.Duration) float64 {
	return float64(f.binds) / d.Seconds()
}
