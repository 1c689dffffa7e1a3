// Command kube-controller-manager is upstream's controller-manager
// (k8s.io/kubernetes, pinned in go.mod) embedded as a library, plus
// nodeplug's --experimental-* features. With no experimental flag set it
// runs upstream's own Run unchanged.
package main

import (
	"os"

	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/logs/json/register"          // JSON log format, as upstream registers it
	_ "k8s.io/component-base/metrics/prometheus/clientgo" // client-go metrics
	_ "k8s.io/component-base/metrics/prometheus/version"  // version metric

	"github.com/nodeplug/nodeplug/cmd/kube-controller-manager/app"
)

func main() {
	os.Exit(cli.Run(app.NewControllerManagerCommand()))
}
