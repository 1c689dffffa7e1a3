//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"testing"
)

// helperEnv names the role this test binary plays when a test starts it
// again as a process on a node (framework.Node.StartProcess): a daemon a
// node plugin's container would run, in the node's namespaces.
const (
	helperEnv       = "NODEPLUG_E2E_HELPER"
	helperCSIDriver = "csi-driver"
)

func TestMain(m *testing.M) {
	switch role := os.Getenv(helperEnv); role {
	case "":
		os.Exit(m.Run())
	case helperCSIDriver:
		if err := runCSIDriver(); err != nil {
			fmt.Fprintf(os.Stderr, "%s: %v\n", role, err)
			os.Exit(1)
		}
		os.Exit(0)
	default:
		fmt.Fprintf(os.Stderr, "%s=%q: unknown role\n", helperEnv, role)
		os.Exit(2)
	}
}
