// Command example is a minimal node plugin that registers with the
// kubelet's plugin watcher through the registrar library and reports the
// kubelet's verdict. It serves nothing but the Registration service, so it
// is meant for a nodeplug plugin type whose handler only needs the name,
// e.g.
//
//	example --dir=/var/lib/kubelet/plugins_registry_nodeplug --type=nodeplug.io/Example --name=example
//
// --dir defaults to defaultDir, the conventional directory for nodeplug's
// --experimental-plugin-registration-dir. It is not upstream's
// /var/lib/kubelet/plugins_registry: nodeplug's kubelet refuses to watch that
// one, and upstream's plugin manager there would reject nodeplug.io types.
//
// It exits non-zero if the kubelet refuses it, and removes its socket (which
// de-registers it) on SIGINT or SIGTERM.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/nodeplug/registrar"
)

// defaultDir is <root-dir>/plugins_registry_nodeplug for the default
// kubelet --root-dir.
const defaultDir = "/var/lib/kubelet/plugins_registry_nodeplug"

func main() {
	dir := flag.String("dir", defaultDir, "nodeplug kubelet's plugin registration directory (--experimental-plugin-registration-dir)")
	typ := flag.String("type", "nodeplug.io/Example", "plugin type (PluginInfo.type)")
	name := flag.String("name", "example", "plugin name (PluginInfo.name)")
	endpoint := flag.String("endpoint", "", "plugin service endpoint; empty means the registration socket")
	versions := flag.String("versions", "v1", "comma-separated supported versions")
	flag.Parse()
	if err := run(*dir, *typ, *name, *endpoint, strings.Split(*versions, ",")); err != nil {
		fmt.Fprintln(os.Stderr, "example:", err)
		os.Exit(1)
	}
}

func run(dir, typ, name, endpoint string, versions []string) error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	refused := make(chan string, 1)
	r, err := registrar.New(registrar.Config{
		Dir: dir, Type: typ, Name: name, Endpoint: endpoint, SupportedVersions: versions,
		OnStatus: func(s registrar.Status) {
			if s.Registered {
				fmt.Println("registered with the kubelet")
				return
			}
			select {
			case refused <- s.Error:
			default:
			}
		},
	})
	if err != nil {
		return err
	}
	if err := r.Start(ctx); err != nil {
		return err
	}
	defer r.Stop()
	fmt.Println("serving registration on", r.SocketPath())
	select {
	case <-ctx.Done():
		return nil
	case reason := <-refused:
		return fmt.Errorf("kubelet refused the plugin: %s", reason)
	}
}
