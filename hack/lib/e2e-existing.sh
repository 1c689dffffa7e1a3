#!/usr/bin/env bash
# The e2e suites against a cluster they did not bring up (E2E_CLUSTER=
# existing): the checks of the environment and of the cluster before any
# test runs, and the counted run of the project's e2e tier. Upstream's
# names: KUBECONFIG, KUBE_SSH_KEY_PATH, KUBE_SSH_USER. Source after init.sh.

# np::e2e::cluster_mode: prints E2E_CLUSTER (local when unset), or dies on
# any other value than local and existing.
np::e2e::cluster_mode() {
  local mode=${E2E_CLUSTER:-local}
  case "${mode}" in
    local | existing) echo "${mode}" ;;
    *) np::die "E2E_CLUSTER=${mode} is not a cluster the e2e suites know" \
      "use local (the default: the suite brings up the local cluster) or existing (the cluster KUBECONFIG names, its nodes reached with KUBE_SSH_KEY_PATH as KUBE_SSH_USER)" ;;
  esac
}

# np::e2e_existing::check_env: dies naming every one of KUBECONFIG,
# KUBE_SSH_KEY_PATH and KUBE_SSH_USER that is unset, and a kubeconfig or
# key that cannot be read.
np::e2e_existing::check_env() {
  local v missing=()
  for v in KUBECONFIG KUBE_SSH_KEY_PATH KUBE_SSH_USER; do
    [[ -n "${!v:-}" ]] || missing+=("${v}")
  done
  ((${#missing[@]} == 0)) || np::die "E2E_CLUSTER=existing needs ${missing[*]}" \
    "KUBECONFIG: the cluster's kubeconfig; KUBE_SSH_KEY_PATH: a private key that logs in to every node; KUBE_SSH_USER: root, or a user with password-less sudo (docs/e2e.md)"
  [[ "${KUBECONFIG}" != *:* ]] || np::die "KUBECONFIG=${KUBECONFIG} is a list" "name one kubeconfig file"
  [[ -r "${KUBECONFIG}" ]] || np::die "KUBECONFIG=${KUBECONFIG} cannot be read" "name the cluster's kubeconfig file"
  [[ -r "${KUBE_SSH_KEY_PATH}" ]] || np::die "KUBE_SSH_KEY_PATH=${KUBE_SSH_KEY_PATH} cannot be read" \
    "name the private key that logs in to every node as ${KUBE_SSH_USER}"
}

# np::e2e_existing::kubectl: the kubectl to check the cluster with before
# the build: ${BIN_DIR}/kubectl when built, else one in PATH, else nothing
# (the check then waits for the build).
np::e2e_existing::kubectl() {
  if [[ -x "${BIN_DIR}/kubectl" ]]; then
    echo "${BIN_DIR}/kubectl"
  else
    command -v kubectl || true
  fi
}

# np::e2e_existing::check_cluster KUBECTL: dies unless the cluster answers
# kubectl version and get nodes (20 s each), and logs its nodes.
np::e2e_existing::check_cluster() {
  local kubectl=$1 out
  out=$("${kubectl}" --kubeconfig "${KUBECONFIG}" --request-timeout=20s version 2>&1) ||
    np::die "the cluster of KUBECONFIG=${KUBECONFIG} does not answer kubectl version: ${out//$'\n'/ }" \
      "check that 'kubectl --kubeconfig ${KUBECONFIG} get nodes' works from this machine"
  out=$("${kubectl}" --kubeconfig "${KUBECONFIG}" --request-timeout=20s get nodes -o wide 2>&1) ||
    np::die "the cluster of KUBECONFIG=${KUBECONFIG} does not list its nodes: ${out//$'\n'/ }" \
      "the kubeconfig's user must be allowed to list nodes (the suite creates pods, PVs and CRDs: use a cluster admin)"
  np::log "existing cluster's nodes:"
  printf '%s\n' "${out}" >&2
}

# np::e2e_existing::run LOG GO_TEST_ARGS...: the project's e2e tier on the
# existing cluster: go test -json into LOG, the tests' output shown as it
# runs, then the counts (hack/tools/e2ecount): passed, failed, skipped
# because they need the local cluster's host (by name), skipped for other
# reasons. Returns non-zero when a test failed or none ran.
np::e2e_existing::run() {
  local log=$1 rc=0
  shift
  mkdir -p "$(dirname "${log}")"
  (cd "${NODEPLUG_ROOT}" && go build -o "${BIN_DIR}/e2ecount" ./hack/tools/e2ecount) ||
    np::die "building hack/tools/e2ecount failed" "see the compiler output above"
  (
    cd "${NODEPLUG_ROOT}"
    go test -tags e2e -count=1 -timeout 30m -json "$@" ./test/e2e/... 2>&1 | tee "${log}" | "${BIN_DIR}/e2ecount"
  ) || rc=$?
  np::log "go test -json log: ${log}"
  return "${rc}"
}
