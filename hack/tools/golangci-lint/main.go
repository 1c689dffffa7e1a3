// Command golangci-lint is golangci-lint with the module plugins nodeplug
// lints with compiled in: logcheck (sigs.k8s.io/logtools), the
// structured and contextual logging checker Kubernetes uses. It is what
// `golangci-lint custom` would build, without cloning golangci-lint's
// repository: both come from the Go module proxy at the versions go.mod pins.
//
// hack/verify-golangci-lint.sh installs it into _output/tools/bin.
package main

import (
	"fmt"
	"os"
	"runtime/debug"
	"strings"

	"github.com/golangci/golangci-lint/v2/pkg/commands"
	"github.com/golangci/golangci-lint/v2/pkg/exitcodes"

	// Registers the "logcheck" module plugin (.golangci.yaml: type: module).
	_ "sigs.k8s.io/logtools/logcheck/gclplugin"
)

const golangciModule = "github.com/golangci/golangci-lint/v2"

func main() {
	if err := commands.Execute(buildInfo()); err != nil {
		fmt.Fprintf(os.Stderr, "golangci-lint: %v\n", err)
		os.Exit(exitcodes.Failure)
	}
}

// buildInfo reports golangci-lint's module version (not this wrapper's) so
// that `golangci-lint version` and the config's version checks see the real one.
func buildInfo() commands.BuildInfo {
	info := commands.BuildInfo{Version: "unknown", Commit: "nodeplug hack/tools/golangci-lint", Date: "(unknown)"}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return info
	}
	info.GoVersion = bi.GoVersion
	for _, dep := range bi.Deps {
		if dep.Path == golangciModule {
			info.Version = strings.TrimPrefix(dep.Version, "v")
		}
	}
	return info
}
