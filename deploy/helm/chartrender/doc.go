// Package chartrender renders nodeplug's Helm charts
// (deploy/helm/local-volume-provisioner and deploy/helm/mount-utilities)
// with Helm's Go library, as helm template and helm install do, and decodes the
// result into objects. It is its own Go module so that Helm's dependencies
// stay out of the module graph of nodeplug's binaries; the chart's tests
// and the e2e test's renderer (cmd/render) use it.
package chartrender
