#!/usr/bin/env bash
# Checks that the chart's copies of the CRDs and the admission policy are
# those of deploy/local-volume-provisioner (hack/update-helm-chart.sh makes
# them), that the chart holds no other file the update does not make, and
# that the chart's Go module is tidy (its go.mod follows the root's pin).
set -o errexit -o nounset -o pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/init.sh"
source "${NODEPLUG_ROOT}/hack/lib/helm-chart.sh"
cd "${NODEPLUG_ROOT}"

rc=0
copies=()
for f in "${NP_HELM_CHART_COPIES[@]}"; do
  copy=$(np::helm_chart::copy_name "${f}")
  copies+=("${copy}")
  if ! diff -u "${NP_HELM_CHART_SOURCE}/${f}" "${NP_HELM_CHART_DIR}/files/${copy}"; then
    np::warn "${NP_HELM_CHART_DIR}/files/${copy} differs from ${NP_HELM_CHART_SOURCE}/${f}"
    rc=1
  fi
done
for f in "${NP_HELM_CHART_DIR}"/files/*; do
  name=$(basename "${f}")
  if [[ " ${copies[*]} " != *" ${name} "* ]]; then
    np::warn "${f} is not made by hack/update-helm-chart.sh"
    rc=1
  fi
done
for dir in "${NP_HELM_MODULES[@]}"; do
  if ! go -C "${dir}" mod tidy -diff; then
    np::warn "${dir}/go.mod or go.sum is not tidy"
    rc=1
  fi
done
if ((rc != 0)); then
  np::die "the Helm chart's copies of deploy/local-volume-provisioner or its Go module are out of date" "run hack/update-helm-chart.sh"
fi
np::log "the Helm chart's copies of ${NP_HELM_CHART_SOURCE} are up to date"
