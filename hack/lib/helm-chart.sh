#!/usr/bin/env bash
# The charts' copies of the kustomize manifests they must not restate:
# <chart>/files/<name> is <source>/<path>, byte for byte, where <name> is
# <path> with each / made a - (memory/crd.yaml is files/memory-crd.yaml).
# Sourced by hack/update-helm-chart.sh and hack/verify-helm-chart.sh.

# NP_HELM_CHARTS: each chart's directory, its kustomize directory and the
# paths there that it copies, separated by spaces.
NP_HELM_CHARTS=(
  "deploy/helm/local-volume-provisioner deploy/local-volume-provisioner crd.yaml admission-policy.yaml memory/crd.yaml"
  "deploy/helm/mount-utilities deploy/mount-utilities admission-policy.yaml"
)

# np::helm_chart::copy_name prints the name in files/ of the copy of $1.
np::helm_chart::copy_name() {
  echo "${1//\//-}"
}
# The chart's modules: each has its own go.mod (Helm's dependencies stay
# out of the root module's graph).
NP_HELM_MODULES=(deploy/helm/chartrender)
