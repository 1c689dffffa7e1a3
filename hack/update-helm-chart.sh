#!/usr/bin/env bash
# Refreshes the chart's copies of the CRDs and the admission policy
# (deploy/helm/local-volume-provisioner/files) from
# deploy/local-volume-provisioner, and tidies the chart's Go module, whose
# go.mod follows the root module's (it replaces it with the repository, so
# a new pin changes its requirements). Run it after changing either
# manifest or the pin; hack/verify-helm-chart.sh checks that it was run.
set -o errexit -o nounset -o pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/init.sh"
source "${NODEPLUG_ROOT}/hack/lib/helm-chart.sh"
cd "${NODEPLUG_ROOT}"

mkdir -p "${NP_HELM_CHART_DIR}/files"
for f in "${NP_HELM_CHART_COPIES[@]}"; do
  cp "${NP_HELM_CHART_SOURCE}/${f}" "${NP_HELM_CHART_DIR}/files/$(np::helm_chart::copy_name "${f}")"
done
for dir in "${NP_HELM_MODULES[@]}"; do
  go -C "${dir}" mod tidy
done
np::log "updated ${NP_HELM_CHART_DIR}/files from ${NP_HELM_CHART_SOURCE} and tidied ${NP_HELM_MODULES[*]}"
