//go:build e2e_upstream

// Package e2eupstream runs upstream Kubernetes' own e2e storage specs
// (k8s.io/kubernetes/test/e2e/storage and test/e2e/common/storage, at the
// version go.mod pins) against
// a running cluster. Only the storage specs are linked in, so the test
// binary builds in a fraction of the time of upstream's e2e.test.
// hack/e2e-upstream.sh builds it, brings up the cluster and chooses the
// specs; docs/e2e-upstream.md says which run and why the others do not.
//
// The flags are upstream's e2e.test flags (-kubeconfig, -ginkgo.focus,
// -storage.testdriver, ...).
package e2eupstream

import (
	"flag"
	"fmt"
	"os"
	"testing"

	upstreame2e "k8s.io/kubernetes/test/e2e"
	"k8s.io/kubernetes/test/e2e/framework"
	e2econfig "k8s.io/kubernetes/test/e2e/framework/config"
	"k8s.io/kubernetes/test/e2e/framework/testfiles"
	e2etestingmanifests "k8s.io/kubernetes/test/e2e/testing-manifests"

	// The specs: PersistentVolumes-local, In-tree Volumes and the rest of
	// sig-storage; external adds -storage.testdriver.
	_ "k8s.io/kubernetes/test/e2e/storage"
	_ "k8s.io/kubernetes/test/e2e/storage/external"
	// ConfigMap, Secrets, Projected, Downward API, EmptyDir and HostPath
	// volumes: the kubelet's own volume plugins, with nodeplug's
	// injections in.
	_ "k8s.io/kubernetes/test/e2e/common/storage"

	// Dumps of the namespace's events and pods when a spec fails.
	_ "k8s.io/kubernetes/test/e2e/framework/debug/init"
)

func TestMain(m *testing.M) {
	e2econfig.CopyFlags(e2econfig.Flags, flag.CommandLine)
	framework.RegisterCommonFlags(flag.CommandLine)
	framework.RegisterClusterFlags(flag.CommandLine)
	flag.Parse()
	if flag.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "unexpected arguments: %v\n", flag.Args())
		os.Exit(2)
	}
	// Manifests the specs read (storage classes, drivers) come from the
	// copy embedded in the module, not from a checkout.
	testfiles.AddFileSource(e2etestingmanifests.GetE2ETestingManifestsFS())
	framework.AfterReadingAllFlags(&framework.TestContext)
	os.Exit(m.Run())
}

// TestUpstreamStorage runs the specs the ginkgo flags select, with
// upstream's suite set-up (every node schedulable, kube-system pods ready).
func TestUpstreamStorage(t *testing.T) {
	upstreame2e.RunE2ETests(t)
}
