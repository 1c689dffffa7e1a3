package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/nodeplug/nodeplug/hack/tools/registry/server"
)

// listens collects the repeated -listen flag.
type listens []string

func (l *listens) String() string     { return strings.Join(*l, ",") }
func (l *listens) Set(v string) error { *l = append(*l, v); return nil }

func main() {
	var o server.Options
	var addrs listens
	flag.StringVar(&o.Root, "root", "", "directory of the registry's blobs and manifests")
	flag.StringVar(&o.Cert, "cert", "", "TLS serving certificate (PEM)")
	flag.StringVar(&o.Key, "key", "", "TLS serving key (PEM)")
	flag.Var(&addrs, "listen", "address to serve on, host:port (repeat for more)")
	flag.Parse()
	o.Listen = addrs
	if err := o.Validate(); err != nil {
		fmt.Fprintf(os.Stderr, "registry: %v\n", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if err := server.Serve(ctx, o); err != nil {
		fmt.Fprintf(os.Stderr, "registry: %v\n", err)
		os.Exit(1)
	}
}
