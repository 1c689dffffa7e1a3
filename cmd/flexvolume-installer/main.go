// Command flexvolume-installer installs flexvolume driver executables into
// the host's plugin directory atomically, then waits for SIGTERM. It is the
// entrypoint of a driver's DaemonSet image; see docs/flexvolume.md.
//
// It stays small and static: klog's flags are registered directly rather
// than through component-base, which would pull in metrics and tracing.
package main

import (
	"os"

	"k8s.io/klog/v2"

	"github.com/nodeplug/nodeplug/cmd/flexvolume-installer/app"
)

func main() {
	klog.FlushAndExit(klog.ExitFlushTimeout, app.Main(os.Args[1:]))
}
