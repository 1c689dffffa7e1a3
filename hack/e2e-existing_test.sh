#!/usr/bin/env bash
# Tests E2E_CLUSTER's checks (hack/lib/e2e-existing.sh) without a cluster:
# each case runs hack/e2e.sh, hack/e2e-upstream.sh or one check with an
# environment and a fake kubectl, and checks the exit code and that the
# message names what is wrong. None of them builds or starts anything: the
# checks run before. hack/verify.sh runs it.
set -o errexit -o nounset -o pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/init.sh"

tmp=$(mktemp -d)
trap 'rm -rf "${tmp}"' EXIT
failures=0
n=0

# Fixtures: a kubeconfig and a key that exist (never used for real), and
# two fake kubectl commands.
printf 'apiVersion: v1\nkind: Config\n' >"${tmp}/kubeconfig"
printf 'not a key\n' >"${tmp}/key"
printf '#!/bin/sh\necho "The connection to the server 192.0.2.1:6443 was refused" >&2\nexit 1\n' >"${tmp}/kubectl-down"
printf '#!/bin/sh\ncase " $* " in *" version "*) echo "Server Version: v1.37.2";; *) echo "w1 Ready";; esac\n' >"${tmp}/kubectl-up"
printf '#!/bin/sh\ncase " $* " in *" version "*) echo "Server Version: v1.37.2";; *) echo "nodes is forbidden" >&2; exit 1;; esac\n' >"${tmp}/kubectl-forbidden"
chmod +x "${tmp}"/kubectl-*

# expect NAME WANT_RC WANT_TEXT COMMAND...: runs COMMAND (with a clean
# E2E_CLUSTER, KUBECONFIG, KUBE_SSH_KEY_PATH and KUBE_SSH_USER unless the
# case sets them through env); WANT_TEXT must be in its output.
expect() {
  local name=$1 want=$2 text=$3 rc=0 out
  shift 3
  n=$((n + 1))
  out=$(env -u E2E_CLUSTER -u KUBECONFIG -u KUBE_SSH_KEY_PATH -u KUBE_SSH_USER "$@" 2>&1) || rc=$?
  if ((rc != want)) || [[ "${out}" != *"${text}"* ]]; then
    printf 'FAIL %s: exit %d (want %d), output:\n%s\n(want it to contain %q)\n' "${name}" "${rc}" "${want}" "${out}" "${text}"
    failures=$((failures + 1))
    return
  fi
  printf 'ok   %s\n' "${name}"
}

# guard makes the whole scripts fail at their first go build, should a
# check no longer come first: no build, no cluster from a test of checks.
guard=(GOFLAGS=-mod=no-build-in-this-test timeout 120)

# check FUNCTION ARGS...: runs a function of the library in a fresh shell.
check() {
  printf 'source %q/hack/lib/init.sh; source %q/hack/lib/e2e-existing.sh; %s\n' \
    "${NODEPLUG_ROOT}" "${NODEPLUG_ROOT}" "$*"
}

expect "unset E2E_CLUSTER is local" 0 "local" bash -c "$(check np::e2e::cluster_mode)"
expect "E2E_CLUSTER=existing" 0 "existing" E2E_CLUSTER=existing bash -c "$(check np::e2e::cluster_mode)"
expect "another E2E_CLUSTER is an error" 1 "E2E_CLUSTER=kind is not a cluster" E2E_CLUSTER=kind bash -c "$(check np::e2e::cluster_mode)"
expect "hack/e2e.sh refuses another E2E_CLUSTER before building" 1 "E2E_CLUSTER=kind is not a cluster" \
  E2E_CLUSTER=kind "${guard[@]}" "${NODEPLUG_ROOT}/hack/e2e.sh"
expect "hack/e2e-upstream.sh refuses another E2E_CLUSTER before building" 1 "E2E_CLUSTER=kind is not a cluster" \
  E2E_CLUSTER=kind "${guard[@]}" "${NODEPLUG_ROOT}/hack/e2e-upstream.sh"
expect "hack/e2e.sh existing names every missing variable" 1 "needs KUBECONFIG KUBE_SSH_KEY_PATH KUBE_SSH_USER" \
  E2E_CLUSTER=existing "${guard[@]}" "${NODEPLUG_ROOT}/hack/e2e.sh"
expect "hack/e2e-upstream.sh existing names every missing variable" 1 "needs KUBECONFIG KUBE_SSH_KEY_PATH KUBE_SSH_USER" \
  E2E_CLUSTER=existing "${guard[@]}" "${NODEPLUG_ROOT}/hack/e2e-upstream.sh"
# A kubectl in PATH (none in BIN_DIR): the cluster is checked before the build.
mkdir -p "${tmp}/path" "${tmp}/bin"
cp "${tmp}/kubectl-down" "${tmp}/path/kubectl"
down=(E2E_CLUSTER=existing KUBECONFIG="${tmp}/kubeconfig" KUBE_SSH_KEY_PATH="${tmp}/key" KUBE_SSH_USER=root
  BIN_DIR="${tmp}/bin" PATH="${tmp}/path:${PATH}")
expect "hack/e2e.sh stops before building when the cluster does not answer" 1 "does not answer kubectl version" \
  "${down[@]}" "${guard[@]}" "${NODEPLUG_ROOT}/hack/e2e.sh"
expect "hack/e2e-upstream.sh stops before building when the cluster does not answer" 1 "does not answer kubectl version" \
  "${down[@]}" "${guard[@]}" "${NODEPLUG_ROOT}/hack/e2e-upstream.sh"
expect "hack/e2e-upstream.sh refuses a KUBE_TEST_REPO_LIST it cannot read" 1 "KUBE_TEST_REPO_LIST=${tmp}/norepos cannot be read" \
  "${down[@]}" KUBE_TEST_REPO_LIST="${tmp}/norepos" "${guard[@]}" "${NODEPLUG_ROOT}/hack/e2e-upstream.sh"
expect "a missing user is named" 1 "E2E_CLUSTER=existing needs KUBE_SSH_USER" \
  KUBECONFIG="${tmp}/kubeconfig" KUBE_SSH_KEY_PATH="${tmp}/key" bash -c "$(check np::e2e_existing::check_env)"
expect "a kubeconfig that is not there" 1 "KUBECONFIG=${tmp}/nothere cannot be read" \
  KUBECONFIG="${tmp}/nothere" KUBE_SSH_KEY_PATH="${tmp}/key" KUBE_SSH_USER=root bash -c "$(check np::e2e_existing::check_env)"
expect "a list of kubeconfigs" 1 "is a list" \
  KUBECONFIG="${tmp}/kubeconfig:${tmp}/kubeconfig" KUBE_SSH_KEY_PATH="${tmp}/key" KUBE_SSH_USER=root bash -c "$(check np::e2e_existing::check_env)"
expect "a key that is not there" 1 "KUBE_SSH_KEY_PATH=${tmp}/nokey cannot be read" \
  KUBECONFIG="${tmp}/kubeconfig" KUBE_SSH_KEY_PATH="${tmp}/nokey" KUBE_SSH_USER=root bash -c "$(check np::e2e_existing::check_env)"
expect "everything set" 0 "" \
  KUBECONFIG="${tmp}/kubeconfig" KUBE_SSH_KEY_PATH="${tmp}/key" KUBE_SSH_USER=ops bash -c "$(check np::e2e_existing::check_env)"
expect "a cluster that does not answer" 1 "does not answer kubectl version: The connection to the server 192.0.2.1:6443 was refused" \
  KUBECONFIG="${tmp}/kubeconfig" bash -c "$(check np::e2e_existing::check_cluster "${tmp}/kubectl-down")"
expect "a cluster that does not list its nodes" 1 "does not list its nodes: nodes is forbidden" \
  KUBECONFIG="${tmp}/kubeconfig" bash -c "$(check np::e2e_existing::check_cluster "${tmp}/kubectl-forbidden")"
expect "a cluster that answers" 0 "w1 Ready" \
  KUBECONFIG="${tmp}/kubeconfig" bash -c "$(check np::e2e_existing::check_cluster "${tmp}/kubectl-up")"

echo "${n} cases, ${failures} failed"
((failures == 0))
