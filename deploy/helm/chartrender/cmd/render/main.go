// Command render prints the objects of deploy/helm/local-volume-provisioner
// rendered with Helm's Go library, as helm template does, for the e2e test:
//
//	render [-chart DIR] [-f values.yaml] [-release NAME] [-namespace NS]
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/nodeplug/nodeplug/deploy/helm/chartrender"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "render:", err)
		os.Exit(1)
	}
}

func run() error {
	opts := chartrender.Options{}
	values := ""
	flag.StringVar(&opts.ChartDir, "chart", chartrender.DefaultChartDir("."), "The chart's directory.")
	flag.StringVar(&values, "f", "", "A values file; empty means the chart's defaults.")
	flag.StringVar(&opts.Release, "release", "local-volume-provisioner", "The release name.")
	flag.StringVar(&opts.Namespace, "namespace", "local-volume-provisioner", "The release namespace.")
	flag.Parse()
	if values != "" {
		v, err := chartrender.ReadValues(values)
		if err != nil {
			return err
		}
		opts.Values = v
	}
	objs, err := chartrender.Render(opts)
	if err != nil {
		return err
	}
	return chartrender.WriteYAML(os.Stdout, objs)
}
