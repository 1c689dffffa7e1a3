#!/usr/bin/env bash
# Common set-up for hack/ scripts: paths, logging and error helpers.
# Source it; do not run it.

NODEPLUG_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd -P)
OUT_DIR=${OUT_DIR:-${NODEPLUG_ROOT}/_output}
BIN_DIR=${BIN_DIR:-${OUT_DIR}/bin}
LOCAL_UP_DIR=${LOCAL_UP_DIR:-${OUT_DIR}/local-up}
# containerd, its runc shim and ctr, built from the module proxy
# (hack/tools/containerd), come before the host's in every script's PATH.
CONTAINERD_BIN_DIR=${CONTAINERD_BIN_DIR:-${BIN_DIR}/containerd}
case ":${PATH}:" in
*":${CONTAINERD_BIN_DIR}:"*) ;;
*) export PATH=${CONTAINERD_BIN_DIR}:${PATH} ;;
esac
# ctr would repeat the daemon's deprecation warnings (cgroup v1 on such
# hosts) on every call; containerd's own log keeps them.
export CONTAINERD_SUPPRESS_DEPRECATION_WARNINGS=${CONTAINERD_SUPPRESS_DEPRECATION_WARNINGS:-1}

# The upstream Kubernetes version embedded in the binaries (go.mod's pin).
KUBE_VERSION=$(awk '$1=="k8s.io/kubernetes" && $2 ~ /^v/ {print $2; exit}' "${NODEPLUG_ROOT}/go.mod")

np::log() { printf '+++ [%s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
np::warn() { printf '!!! [%s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
# np::die MESSAGE [HINT]: print an actionable error and exit 1.
np::die() {
  printf '\nERROR: %s\n' "$1" >&2
  [[ -n "${2:-}" ]] && printf 'HINT:  %s\n' "$2" >&2
  exit 1
}

# np::pinned_version TOOL MODULE prints the version of MODULE that
# hack/tools/TOOL/go.mod requires (each tool built from the module proxy is
# pinned in a module of its own there).
np::pinned_version() {
  awk -v m="$2" '$1 == "require" && $2 == m {print $3}' "${NODEPLUG_ROOT}/hack/tools/$1/go.mod"
}

# np::wait_for SECONDS DESCRIPTION COMMAND...: poll COMMAND every 0.2 s.
np::wait_for() {
  local timeout=$1 what=$2 deadline
  shift 2
  deadline=$((SECONDS + timeout))
  until "$@" >/dev/null 2>&1; do
    if ((SECONDS >= deadline)); then
      return 1
    fi
    sleep 0.2
  done
  np::log "${what}: ready"
}
