#!/usr/bin/env bash
# Unit tests with -race (but the two wiring packages of the kubelet and the
# controller-manager, below): the root module's pkg/, cmd/, build/ (the image
# binaries and flex drivers; their FUSE tests need root and /dev/fuse) and
# deploy/ (manifest checks), the e2e framework's helpers that need no
# cluster (test/e2e/framework without the e2e tag), the counter of
# hack/e2e.sh on an existing cluster (hack/tools/e2ecount), every staging
# module (each is its own Go module), the Helm chart's module
# (deploy/helm/chartrender: the charts rendered with Helm's Go library), the
# local registry's module (hack/tools/registry), and the local cluster's
# CoreDNS build (hack/tools/coredns).
# Extra arguments go to go test.
set -o errexit -o nounset -o pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/init.sh"
cd "${NODEPLUG_ROOT}"
hack/install-deps.sh

rc=0
# The kubelet's and the controller-manager's wiring packages import the whole
# of upstream's kubelet and controller-manager: under -race they compile a
# second, instrumented copy of both that nothing else shares (about 400 s on a
# cold cache, docs/benchmarks.md). nodeplug's concurrent code lives in pkg/,
# which keeps -race; the two wiring packages run without it and share the
# build cache of hack/build.sh.
# Packages without test files are left out: go test would still compile
# them, and under -race the kubelet's and the controller-manager's main
# packages (and build/dra-test-driver, upstream's e2e framework) would bring
# the instrumented copy back. hack/build.sh and verify's go vet compile them.
wiring='/cmd/(kubelet|kube-controller-manager)/app$'
with_tests='{{if or .TestGoFiles .XTestGoFiles}}{{.ImportPath}}{{end}}'
mapfile -t race_pkgs < <(go list -f "${with_tests}" ./pkg/... ./cmd/... ./build/... ./deploy/... ./test/e2e/framework ./hack/tools/e2ecount | grep -vE "${wiring}" | grep .)
mapfile -t plain_pkgs < <(go list -f "${with_tests}" ./cmd/... | grep -E "${wiring}")
go test -race -count=1 "$@" "${race_pkgs[@]}" || rc=1
go test -count=1 "$@" "${plain_pkgs[@]}" || rc=1
for mod in staging/src/github.com/nodeplug/*/go.mod; do
  [[ -f "${mod}" ]] || continue
  dir=$(dirname "${mod}")
  np::log "unit tests of staging module ${dir}"
  (cd "${dir}" && go test -race -count=1 "$@" ./...) || rc=1
done
# The local registry and its push command (hack/tools/registry, a module of
# its own): pushes into the real registry server over TLS.
np::log "unit tests of hack/tools/registry"
(cd hack/tools/registry && go test -race -count=1 "$@" ./...) || rc=1
# CoreDNS's directive list against its plugins and deploy/coredns/Corefile
# (hack/tools/coredns, a module of its own). With np::build::coredns's
# flags, so that it reuses that build's cache; no -race: the test runs no
# goroutines of ours, and an instrumented CoreDNS is a second cold build.
np::log "unit tests of hack/tools/coredns"
(cd hack/tools/coredns && CGO_ENABLED=0 go test -trimpath -count=1 "$@" ./...) || rc=1
source hack/lib/helm-chart.sh
for dir in "${NP_HELM_MODULES[@]}"; do
  np::log "unit tests of the Helm chart module ${dir}"
  (cd "${dir}" && go test -race -count=1 "$@" ./...) || rc=1
done
exit "${rc}"
