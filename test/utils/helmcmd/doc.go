// Package helmcmd runs, for the integration and e2e tests, the helm command
// that hack/tools/helm pins and the hack scripts build (its path in
// NODEPLUG_HELM): against one cluster's kubeconfig, with helm's
// configuration, cache and data directories of its own, so that a test
// neither reads nor writes the user's.
package helmcmd
