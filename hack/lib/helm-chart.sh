#!/usr/bin/env bash
# The chart's copies of the kustomize manifests it must not restate:
# deploy/helm/local-volume-provisioner/files/<name> is
# deploy/local-volume-provisioner/<path>, byte for byte, where <name> is
# <path> with each / made a - (memory/crd.yaml is files/memory-crd.yaml).
# Sourced by hack/update-helm-chart.sh and hack/verify-helm-chart.sh.

NP_HELM_CHART_DIR=deploy/helm/local-volume-provisioner
NP_HELM_CHART_SOURCE=deploy/local-volume-provisioner
NP_HELM_CHART_COPIES=(crd.yaml admission-policy.yaml memory/crd.yaml)

# np::helm_chart::copy_name prints the name in files/ of the copy of $1.
np::helm_chart::copy_name() {
  echo "${1//\//-}"
}
# The chart's modules: each has its own go.mod (Helm's dependencies stay
# out of the root module's graph).
NP_HELM_MODULES=(deploy/helm/chartrender)
