// Command csi-hostpath is nodeplug's CSI driver for the local cluster's
// default StorageClass: volumes are directories on the node that holds
// them (package driver, README.md there).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"k8s.io/klog/v2"

	"github.com/nodeplug/nodeplug/build/csi-hostpath/driver"
)

const defaultName = "hostpath.csi.nodeplug.io"

func main() {
	klog.InitFlags(nil)
	var cfg driver.Config
	flag.StringVar(&cfg.Name, "drivername", defaultName, "CSI driver name")
	flag.StringVar(&cfg.NodeID, "nodeid", os.Getenv("NODE_NAME"), "this node's name (default $NODE_NAME)")
	flag.StringVar(&cfg.KubeletDir, "kubelet-dir", "/var/lib/kubelet", "the kubelet's root directory; volumes are published only below its pods/")
	flag.StringVar(&cfg.DataDir, "data-dir", "/var/lib/csi-hostpath-data", "directory of the volumes; it must be this node's own")
	flag.StringVar(&cfg.Endpoint, "endpoint", "", "CSI socket path (default <kubelet-dir>/plugins/<drivername>/csi.sock)")
	flag.StringVar(&cfg.RegistrationDir, "registration-dir", "", "the kubelet's plugin registration directory, e.g. <kubelet-dir>/plugins_registry_nodeplug for nodeplug's plugin watcher (empty: do not register)")
	flag.Int64Var(&cfg.MaxVolumeBytes, "max-volume-bytes", 0, "refuse volumes larger than this (0: no limit)")
	flag.Parse()
	if flag.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "unexpected arguments: %v\n", flag.Args())
		os.Exit(2)
	}
	if cfg.Endpoint == "" {
		cfg.Endpoint = filepath.Join(cfg.KubeletDir, "plugins", cfg.Name, "csi.sock")
	}
	cfg.VendorVersion = version
	ctx, cancel := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer cancel()
	ctx = klog.NewContext(ctx, klog.Background())
	if err := run(ctx, cfg); err != nil {
		klog.Background().Error(err, "csi-hostpath failed")
		klog.FlushAndExit(klog.ExitFlushTimeout, 1)
	}
}

// version is set with -ldflags -X main.version=...
var version = "dev"

func run(ctx context.Context, cfg driver.Config) error {
	d, err := driver.New(cfg)
	if err != nil {
		return err
	}
	return d.Run(ctx)
}
