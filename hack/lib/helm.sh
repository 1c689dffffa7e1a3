#!/usr/bin/env bash
# np::helm::build builds the helm command pinned by hack/tools/helm/go.mod
# (from the Go module proxy) into ${BIN_DIR}/helm, unless it is there at
# the pinned version already. make release packages the chart with it and
# the integration tier drives it against a real kube-apiserver
# (test/integration/helm). About 4 minutes cold on 2 busy cores, 2 s warm.

np::helm::version() {
  np::pinned_version helm helm.sh/helm/v3
}

np::helm::build() {
  local version
  version=$(np::helm::version)
  [[ -n "${version}" ]] || np::die "hack/tools/helm/go.mod pins no helm.sh/helm/v3" "restore the require line in hack/tools/helm/go.mod"
  if [[ -x "${BIN_DIR}/helm" ]] && "${BIN_DIR}/helm" version --template '{{.Version}}' 2>/dev/null | grep -qxF "${version}"; then
    return 0
  fi
  mkdir -p "${BIN_DIR}"
  np::log "building helm ${version} into ${BIN_DIR}"
  (
    cd "${NODEPLUG_ROOT}/hack/tools/helm" &&
      CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X helm.sh/helm/v3/internal/version.version=${version}" \
        -o "${BIN_DIR}/helm" helm.sh/helm/v3/cmd/helm
  ) || np::die "building helm ${version} failed (see the compiler output above)" \
    "run 'go build helm.sh/helm/v3/cmd/helm' in hack/tools/helm; check that the Go module proxy is reachable"
}
