// Command local-volume-provisioner is nodeplug's distributed local PV static
// provisioner. One binary holds four roles, chosen by subcommand: master
// (Deployment), watcher (DaemonSet), and the discover and cleanup Job
// entrypoints.
package main

import (
	"os"

	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/logs/json/register"

	"github.com/nodeplug/nodeplug/cmd/local-volume-provisioner/app"
)

func main() {
	os.Exit(cli.Run(app.NewCommand()))
}
