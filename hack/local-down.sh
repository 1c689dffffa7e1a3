#!/usr/bin/env bash
# Stops the local cluster that hack/local-up-cluster.sh started: only the
# processes whose PIDs it recorded (and the container shims of its own
# containerd), in reverse dependency order. Then unmounts everything below
# the cluster's directory, removes the network namespaces and bridge its
# pods used, and deletes the directory. Safe to run twice.
set -o errexit -o nounset -o pipefail

source "$(dirname "${BASH_SOURCE[0]}")/lib/init.sh"
source "${NODEPLUG_ROOT}/hack/lib/cluster.sh"

# stop NAME: SIGTERM, wait up to 30 s, then SIGKILL.
stop() {
  local name=$1 pid i
  pid=$(np::cluster::pid "${name}") || { rm -f "${LOCAL_UP_DIR}/pids/${name}"; return 0; }
  kill -TERM "${pid}" 2>/dev/null || true
  for ((i = 0; i < 150; i++)); do
    kill -0 "${pid}" 2>/dev/null || break
    sleep 0.2
  done
  if kill -0 "${pid}" 2>/dev/null; then
    np::warn "${name} (pid ${pid}) did not stop in 30 s; killing it"
    kill -KILL "${pid}" 2>/dev/null || true
  fi
  rm -f "${LOCAL_UP_DIR}/pids/${name}"
  np::log "stopped ${name}"
}

# stop_containers kills every container of our containerd while it runs.
stop_containers() {
  np::cluster::alive containerd || return 0
  local c=(ctr --address "${CONTAINERD_SOCK}" -n k8s.io) id
  for id in $("${c[@]}" tasks ls -q 2>/dev/null); do
    timeout 10 "${c[@]}" tasks kill -s SIGKILL "${id}" >/dev/null 2>&1 || true
  done
  for id in $("${c[@]}" tasks ls -q 2>/dev/null); do
    timeout 10 "${c[@]}" tasks delete -f "${id}" >/dev/null 2>&1 || true
  done
  for id in $("${c[@]}" containers ls -q 2>/dev/null); do
    timeout 10 "${c[@]}" containers delete "${id}" >/dev/null 2>&1 || true
  done
}

# kill_shims ends shims that our containerd started and left behind.
kill_shims() {
  local pid
  for pid in $(pgrep -f "containerd-shim-runc-v2.*-address ${CONTAINERD_SOCK}" || true); do
    kill -KILL "${pid}" 2>/dev/null || true
  done
}

# unmount_all unmounts everything below the cluster dir, deepest first.
unmount_all() {
  local m
  for ((pass = 0; pass < 3; pass++)); do
    mapfile -t mounts < <(awk -v d="${LOCAL_UP_DIR}" '$5 == d || index($5, d "/") == 1 {print $5}' /proc/self/mountinfo | sort -r)
    ((${#mounts[@]} == 0)) && return 0
    for m in "${mounts[@]}"; do
      umount "${m}" 2>/dev/null || umount -l "${m}" 2>/dev/null || true
    done
  done
  awk -v d="${LOCAL_UP_DIR}" '$5 == d || index($5, d "/") == 1 {found=1} END {exit !found}' /proc/self/mountinfo &&
    np::die "mounts remain below ${LOCAL_UP_DIR}; not deleting it" "see: grep ${LOCAL_UP_DIR} /proc/self/mountinfo"
  return 0
}

# remove_netns removes the pod network namespaces this cluster created
# (those not present before it started).
remove_netns() {
  local ns before=${LOCAL_UP_DIR}/netns-before
  for ns in /run/netns/cni-*; do
    [[ -e "${ns}" ]] || continue
    if [[ -f "${before}" ]] && grep -qxF "$(basename "${ns}")" "${before}"; then
      continue
    fi
    umount "${ns}" 2>/dev/null || true
    rm -f "${ns}"
  done
  ip link del "${CNI_BRIDGE}" >/dev/null 2>&1 || true
}

main() {
  [[ -d "${LOCAL_UP_DIR}" ]] || { np::log "no local cluster state in ${LOCAL_UP_DIR}; nothing to do"; return 0; }
  stop kubelet
  stop_containers
  stop kube-controller-manager
  stop kube-scheduler
  stop kube-apiserver
  stop etcd
  stop containerd
  kill_shims
  unmount_all
  remove_netns
  rm -rf "${LOCAL_UP_DIR}"
  np::log "local cluster stopped and cleaned up"
}

main "$@"
