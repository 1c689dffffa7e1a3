package framework

import (
	"fmt"
	"net"
	"net/url"
	"os"
	"testing"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
)

// etcdURL is the client URL of the package's shared etcd, set by EtcdMain.
var etcdURL string

// EtcdMain runs the package's tests against one embedded etcd. Call it
// from TestMain: func TestMain(m *testing.M) { framework.EtcdMain(m) }.
func EtcdMain(m *testing.M) {
	stop, err := startEtcd()
	if err != nil {
		fmt.Fprintln(os.Stderr, "integration framework: starting embedded etcd:", err)
		os.Exit(1)
	}
	code := m.Run()
	stop()
	os.Exit(code)
}

// EtcdURL returns the shared etcd's client URL.
func EtcdURL() string { return etcdURL }

func startEtcd() (func(), error) {
	dir, err := os.MkdirTemp("", "nodeplug-etcd-")
	if err != nil {
		return nil, err
	}
	client, peer, err := freeURLs()
	if err != nil {
		return nil, err
	}
	cfg := embed.NewConfig()
	cfg.Name = "integration"
	cfg.Dir = dir
	cfg.LogLevel = "error"
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{client}, []url.URL{client}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{peer}, []url.URL{peer}
	cfg.InitialCluster = cfg.Name + "=" + peer.String()
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	select {
	case <-e.Server.ReadyNotify():
	case <-time.After(60 * time.Second):
		e.Close()
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("etcd not ready after 60 s")
	}
	etcdURL = client.String()
	return func() {
		e.Close()
		_ = os.RemoveAll(dir)
	}, nil
}

// freeURLs returns two loopback URLs on ports that were free a moment ago.
func freeURLs() (client, peer url.URL, err error) {
	var ports [2]int
	for i := range ports {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return client, peer, err
		}
		ports[i] = l.Addr().(*net.TCPAddr).Port
		defer l.Close()
	}
	client = url.URL{Scheme: "http", Host: fmt.Sprintf("127.0.0.1:%d", ports[0])}
	peer = url.URL{Scheme: "http", Host: fmt.Sprintf("127.0.0.1:%d", ports[1])}
	return client, peer, nil
}
