#!/usr/bin/env bash
# Refreshes the Helm charts' copies of the kustomize manifests (the CRDs and
# the admission policy of deploy/local-volume-provisioner in
# deploy/helm/local-volume-provisioner/files, the admission policy of
# deploy/mount-utilities in deploy/helm/mount-utilities/files;
# hack/lib/helm-chart.sh lists them), and tidies the charts' Go module,
# whose go.mod follows the root module's (it replaces it with the
# repository, so a new pin changes its requirements). Run it after changing
# a copied manifest or the pin; hack/verify-helm-chart.sh checks that it
# was run.
set -o errexit -o nounset -o pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/init.sh"
source "${NODEPLUG_ROOT}/hack/lib/helm-chart.sh"
cd "${NODEPLUG_ROOT}"

for entry in "${NP_HELM_CHARTS[@]}"; do
  read -r chart source copies <<<"${entry}"
  mkdir -p "${chart}/files"
  for f in ${copies}; do
    cp "${source}/${f}" "${chart}/files/$(np::helm_chart::copy_name "${f}")"
  done
  np::log "updated ${chart}/files from ${source}"
done
for dir in "${NP_HELM_MODULES[@]}"; do
  go -C "${dir}" mod tidy
done
np::log "tidied ${NP_HELM_MODULES[*]}"
