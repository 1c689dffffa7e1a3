#!/usr/bin/env bash
# Tests how 'make local-up' and 'make local-down' handle faults, on the real
# local cluster (root; the binaries already built, as hack/e2e.sh does
# first):
#   port taken:    local-up refuses, naming the process, and creates nothing;
#   no containerd: containerd was not built (SKIP_BUILD=1 on a fresh
#                  checkout): local-up refuses, names the fix, and creates
#                  nothing (it never falls back to the host's containerd);
#   half way:      the controller-manager cannot start: local-up says which
#                  process failed and that the cluster is half up;
#   killed run:    every process of a running cluster (with a pod and a loop
#                  device) is SIGKILLed; local-up cleans up and starts again.
# After each, local-down must leave no process, mount, loop device, network
# namespace, pod cgroup process or iptables rule of the cluster behind, and
# with several nodes no bridge, veth, route, cgroup root or mount-point
# directory of the nodes. Every case runs with one node and with three
# (FAULTS_NODES="1 3"), in FAULTS_UP_DIR (default: faults-up beside
# LOCAL_UP_DIR), which must be root's as LOCAL_UP_DIR must.
set -o errexit -o nounset -o pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/init.sh"
# A cluster directory of its own beside the e2e suite's (by default
# _output/faults-up), so that a failure here never touches that cluster.
LOCAL_UP_DIR=${FAULTS_UP_DIR:-$(dirname "${LOCAL_UP_DIR}")/faults-up}
export LOCAL_UP_DIR SKIP_BUILD=1 KUBELET_EXTRA_FLAGS="" KCM_EXTRA_FLAGS="" KUBELET_HIDDEN_UTILITIES=""
source "${NODEPLUG_ROOT}/hack/lib/cluster.sh"
source "${NODEPLUG_ROOT}/hack/lib/netfilter.sh"
source "${NODEPLUG_ROOT}/hack/lib/images.sh"
source "${NODEPLUG_ROOT}/hack/lib/nodes.sh"
source "${NODEPLUG_ROOT}/hack/lib/preflight.sh"
np::preflight::local_up_dir "${LOCAL_UP_DIR}"

WORK=$(mktemp -d /tmp/np-faults.XXXXXX)
holder=""
cleanup() {
  [[ -z "${holder}" ]] || kill "${holder}" 2>/dev/null || true
  "${NODEPLUG_ROOT}/hack/local-down.sh" >/dev/null 2>&1 || true
  rm -rf "${WORK}"
}
trap cleanup EXIT

fail() { np::die "local-up-faults_test: $1" "${2:-}"; }
kubectl() { KUBECONFIG=${LOCAL_UP_DIR}/pki/admin.kubeconfig "${BIN_DIR}/kubectl" "$@"; }

# expect_clean NAME: what local-down must have removed.
expect_clean() {
  local name=$1 left=() dev ino
  [[ ! -e "${LOCAL_UP_DIR}" ]] || left+=("the directory ${LOCAL_UP_DIR}")
  pgrep -f "${LOCAL_UP_DIR}" >/dev/null && left+=("processes: $(pgrep -af "${LOCAL_UP_DIR}" | cut -c1-120 | tr '\n' ';')")
  grep -qF "${LOCAL_UP_DIR}" /proc/self/mountinfo && left+=("mounts below ${LOCAL_UP_DIR}")
  if [[ -s "${WORK}/loop" ]]; then
    read -r dev ino <"${WORK}/loop"
    [[ "$(losetup -n -O BACK-INO "${dev}" 2>/dev/null | tr -d ' ')" == "${ino}" ]] && left+=("loop device ${dev}")
  fi
  ip link show "${CNI_BRIDGE}" >/dev/null 2>&1 && left+=("bridge ${CNI_BRIDGE}")
  [[ "$(ls /run/netns 2>/dev/null)" == "$(cat "${WORK}/netns")" ]] || left+=("network namespaces: $(ls /run/netns | tr '\n' ' ')")
  [[ -z "$(np::netfilter::added "${WORK}/iptables")" ]] || left+=("iptables: $(np::netfilter::added "${WORK}/iptables" | head -n 3 | tr '\n' ';')")
  [[ -z "$(cat "${WORK}/pod-pids" 2>/dev/null | xargs -r ps -o pid= -p 2>/dev/null)" ]] || left+=("pod processes")
  [[ "$(host_state)" == "$(cat "${WORK}/host-state")" ]] ||
    left+=("of the nodes: $(diff <(cat "${WORK}/host-state") <(host_state) | grep '^>' | tr '\n' ';')")
  ((${#left[@]} == 0)) || fail "${name}: local-down left ${left[*]}"
  np::log "local-up-faults_test: ${name}: local-down left nothing behind"
}

# host_state prints what nodes add to the host: links (the bridge and
# veths), routes, cgroup roots, and (NODES > 1) the mount points of
# upstream's paths. With one node the kubelet itself creates
# /var/lib/kubelet/device-plugins, a path upstream does not let it move.
host_state() {
  ip -o link show | awk '{print "link", $2}' | sed 's/@.*//'
  ip -4 route show | sed 's/^/route /'
  { ls -d /sys/fs/cgroup/*/"${NODE_NAME}"-* 2>/dev/null || true; } | sed 's/^/cgroup /'
  local m
  ((NODES > 1)) || return 0
  for m in "${NODE_MOUNTS[@]}"; do
    [[ -e "${m#*:}" ]] && echo "dir ${m#*:}"
  done
  return 0
}

# local_up NAME EXPECT_RC: runs local-up, keeps its output in ${WORK}/NAME.
# Without cluster DNS and the default StorageClass: these cases are about
# starting and cleaning up, and the rollouts of CoreDNS and csi-hostpath
# would only lengthen each (the e2e tier runs both, TestClusterDNS and
# TestDefaultStorageClass).
local_up() {
  local rc=0
  LOCAL_UP_DNS=false DEFAULT_STORAGECLASS=false \
    "${NODEPLUG_ROOT}/hack/local-up-cluster.sh" >"${WORK}/$1.out" 2>&1 || rc=$?
  if [[ "$2" == 0 && ${rc} != 0 ]] || [[ "$2" != 0 && ${rc} == 0 ]]; then
    fail "$1: local-up exited ${rc}" "its output: $(tail -n 8 "${WORK}/$1.out" | tr '\n' ' ')"
  fi
}

expect_output() { # NAME TEXT
  grep -qF -- "$2" "${WORK}/$1.out" || fail "$1: local-up did not say: $2" "it said: $(tail -n 6 "${WORK}/$1.out" | tr '\n' ' ')"
}

port_taken() {
  socat TCP-LISTEN:10259,bind=127.0.0.1,reuseaddr,fork /dev/null &
  holder=$!
  np::wait_for 10 "a listener on port 10259" bash -c "ss -Htln 'sport = :10259' | grep -q ."
  local name=port-taken-n${NODES}
  local_up "${name}" 1
  kill "${holder}" && wait "${holder}" 2>/dev/null || true
  holder=""
  expect_output "${name}" "port 10259 is already in use by"
  expect_output "${name}" "socat"
  [[ ! -e "${LOCAL_UP_DIR}" ]] || fail "${name}: local-up created ${LOCAL_UP_DIR} before refusing"
  expect_clean "${name}"
}

no_containerd() {
  local name=no-containerd-n${NODES}
  CONTAINERD_BIN_DIR=${WORK}/no-containerd local_up "${name}" 1
  expect_output "${name}" "${WORK}/no-containerd has no containerd and runc shim"
  expect_output "${name}" "run hack/build.sh"
  [[ ! -e "${LOCAL_UP_DIR}" ]] || fail "${name}: local-up created ${LOCAL_UP_DIR} before refusing"
  expect_clean "${name}"
}

half_way() {
  local name=half-way-n${NODES}
  KCM_EXTRA_FLAGS=--no-such-flag local_up "${name}" 1
  expect_output "${name}" "kube-controller-manager exited during start-up"
  expect_output "${name}" "unknown flag: --no-such-flag"
  expect_output "${name}" "The local cluster is half up"
  "${NODEPLUG_ROOT}/hack/local-down.sh" >"${WORK}/${name}-down.out" 2>&1 ||
    fail "${name}: local-down failed" "$(tail -n 5 "${WORK}/${name}-down.out" | tr '\n' ' ')"
  expect_clean "${name}"
}

# killed_run: a cluster with a running pod and a loop device in its
# directory; every process it recorded is SIGKILLed, as a crash or an
# OOM kill would leave it. local-up must clean that up and start again.
killed_run() {
  local pidfile dev name=killed-run-n${NODES}
  local_up "${name}-first" 0
  kubectl run faults-pod --image="${BUSYBOX_IMAGE}" --image-pull-policy=Never --restart=Never --command -- sleep 3600 >/dev/null
  kubectl wait --for=condition=Ready pod/faults-pod --timeout=90s >/dev/null || fail "${name}: the pod did not become Ready"
  truncate -s 16M "${LOCAL_UP_DIR}/shared/faults.img"
  dev=$(losetup -f --show "${LOCAL_UP_DIR}/shared/faults.img")
  echo "${dev} $(losetup -n -O BACK-INO "${dev}" | tr -d ' ')" >"${WORK}/loop"
  local uid
  uid=$(kubectl get pod faults-pod -o jsonpath='{.metadata.uid}')
  find /sys/fs/cgroup/pids -type d -name "pod${uid}" -exec find {} -name cgroup.procs \; | xargs -r cat >"${WORK}/pod-pids"
  [[ -s "${WORK}/pod-pids" ]] || fail "${name}: found no process of the pod's cgroup"
  for pidfile in "${LOCAL_UP_DIR}"/pids/*; do
    kill -KILL "$(cat "${pidfile}")" 2>/dev/null || true
  done
  sleep 1
  local_up "${name}-again" 0
  expect_output "${name}-again" "cleaning up state left by a previous local cluster"
  "${NODEPLUG_ROOT}/hack/local-down.sh" >"${WORK}/${name}-down.out" 2>&1 ||
    fail "${name}: local-down failed" "$(tail -n 5 "${WORK}/${name}-down.out" | tr '\n' ' ')"
  expect_clean "${name}"
  rm -f "${WORK}/loop" "${WORK}/pod-pids"
}

main() {
  [[ ${EUID} -eq 0 ]] || fail "needs root" "run it as root, as the e2e tier does"
  [[ -x "${BIN_DIR}/kube-apiserver" ]] || fail "no binaries in ${BIN_DIR}" "run hack/build.sh first"
  "${NODEPLUG_ROOT}/hack/install-deps.sh" # socat, on a fresh machine too
  "${NODEPLUG_ROOT}/hack/local-down.sh" >/dev/null 2>&1 || true
  np::netfilter::snapshot "${WORK}/iptables"
  ls /run/netns 2>/dev/null >"${WORK}/netns" || true
  local case
  for NODES in ${FAULTS_NODES:-1 3}; do
    export NODES
    for case in port_taken no_containerd half_way killed_run; do
      host_state >"${WORK}/host-state"
      "${case}"
    done
  done
  np::log "local-up-faults_test: all cases passed"
}

main "$@"
