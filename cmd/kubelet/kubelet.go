// Command kubelet is upstream's kubelet (k8s.io/kubernetes, pinned in go.mod)
// embedded as a library, plus nodeplug's --experimental-* features. With no
// experimental flag set it runs upstream's kubelet with upstream's
// dependencies unchanged; only its start-up command's messages, --version and
// --help differ (README.md, "The binaries").
package main

import (
	"context"
	"os"

	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/logs/json/register"          // JSON log format, as upstream registers it
	_ "k8s.io/component-base/metrics/prometheus/clientgo" // client-go metrics
	_ "k8s.io/component-base/metrics/prometheus/version"  // version metric

	"github.com/nodeplug/nodeplug/cmd/kubelet/app"
)

func main() {
	os.Exit(cli.Run(app.NewKubeletCommand(context.Background())))
}
