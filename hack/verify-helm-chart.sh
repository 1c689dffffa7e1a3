#!/usr/bin/env bash
# Checks that each Helm chart's copies of the kustomize manifests are those
# of its kustomize directory (hack/update-helm-chart.sh makes them;
# hack/lib/helm-chart.sh lists them), that no chart holds another file in
# files/ that the update does not make, and that the charts' Go module is
# tidy (its go.mod follows the root's pin).
set -o errexit -o nounset -o pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/init.sh"
source "${NODEPLUG_ROOT}/hack/lib/helm-chart.sh"
cd "${NODEPLUG_ROOT}"

rc=0
for entry in "${NP_HELM_CHARTS[@]}"; do
  read -r chart source copies <<<"${entry}"
  made=()
  for f in ${copies}; do
    copy=$(np::helm_chart::copy_name "${f}")
    made+=("${copy}")
    if ! diff -u "${source}/${f}" "${chart}/files/${copy}"; then
      np::warn "${chart}/files/${copy} differs from ${source}/${f}"
      rc=1
    fi
  done
  for f in "${chart}"/files/*; do
    name=$(basename "${f}")
    if [[ " ${made[*]} " != *" ${name} "* ]]; then
      np::warn "${f} is not made by hack/update-helm-chart.sh"
      rc=1
    fi
  done
done
for dir in "${NP_HELM_MODULES[@]}"; do
  if ! go -C "${dir}" mod tidy -diff; then
    np::warn "${dir}/go.mod or go.sum is not tidy"
    rc=1
  fi
done
if ((rc != 0)); then
  np::die "a Helm chart's copies of the kustomize manifests or the charts' Go module are out of date" "run hack/update-helm-chart.sh"
fi
np::log "the Helm charts' copies of the kustomize manifests are up to date"
