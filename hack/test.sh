#!/usr/bin/env bash
# Unit tests with -race: the root module's pkg/, cmd/, build/ (the image
# binaries and flex drivers; their FUSE tests need root and /dev/fuse) and
# deploy/ (manifest checks), every staging module (each is its own Go
# module), and the Helm chart's module (deploy/helm/chartrender: the chart
# rendered with Helm's Go library). Extra arguments go to go test.
set -o errexit -o nounset -o pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/init.sh"
cd "${NODEPLUG_ROOT}"
hack/install-deps.sh

rc=0
go test -race -count=1 "$@" ./pkg/... ./cmd/... ./build/... ./deploy/... || rc=1
for mod in staging/src/github.com/nodeplug/*/go.mod; do
  [[ -f "${mod}" ]] || continue
  dir=$(dirname "${mod}")
  np::log "unit tests of staging module ${dir}"
  (cd "${dir}" && go test -race -count=1 "$@" ./...) || rc=1
done
source hack/lib/helm-chart.sh
for dir in "${NP_HELM_MODULES[@]}"; do
  np::log "unit tests of the Helm chart module ${dir}"
  (cd "${dir}" && go test -race -count=1 "$@" ./...) || rc=1
done
exit "${rc}"
