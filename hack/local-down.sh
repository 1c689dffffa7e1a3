#!/usr/bin/env bash
# Stops the local cluster that hack/local-up-cluster.sh started: only the
# processes whose PIDs it recorded (and the container shims of its own
# containerd), in reverse dependency order. Then unmounts everything below
# the cluster's directory, detaches the loop devices backed by files in it,
# removes the network namespaces and bridge its pods used and the iptables
# chains and rules added since local-up, deletes the directory, and checks
# that none of it is left. Safe to run twice.
set -o errexit -o nounset -o pipefail

source "$(dirname "${BASH_SOURCE[0]}")/lib/init.sh"
source "${NODEPLUG_ROOT}/hack/lib/cluster.sh"
source "${NODEPLUG_ROOT}/hack/lib/netfilter.sh"
source "${NODEPLUG_ROOT}/hack/lib/nodes.sh"

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

# stop_containers [NAME SOCKET] kills every container of our containerd
# (or of the containerd NAME listening on SOCKET) while it runs.
stop_containers() {
  np::cluster::alive "${1:-containerd}" || return 0
  local c=(ctr --address "${2:-${CONTAINERD_SOCK}}" -n k8s.io) id
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

# stop_node I: stops node I of a multi-node cluster: its kube-proxy,
# kubelet, containers and containerd, then its init, which ends whatever
# is left in the node (every process of its PID namespace).
stop_node() {
  local name
  name=$(np::nodes::name "$1")
  node_systemctl "$1" stop kube-proxy kubelet
  stop "kube-proxy-${name}"
  stop "kubelet-${name}"
  stop_containers "containerd-${name}" "$(np::nodes::sock "$1")"
  node_systemctl "$1" stop containerd
  stop "containerd-${name}"
  stop "node-${name}"
}

# node_systemctl I ARGS...: node I's service manager, if the node runs, so
# that no supervisor starts a stopped service again (stop then finds it
# gone); best effort, as stop follows.
node_systemctl() {
  local init
  init=$(np::nodes::init_pid "$1") || return 0
  shift
  timeout 60 nsenter --target "${init}" --mount --net --uts --pid -- "${BIN_DIR}/systemctl" "$@" >/dev/null 2>&1 || true
}

# stop_nodes stops every node of a multi-node cluster, all at once.
stop_nodes() {
  local i jobs=()
  for i in $(np::nodes::indexes); do
    stop_node "${i}" &
    jobs+=($!)
  done
  for i in "${jobs[@]}"; do
    wait "${i}" || true
  done
}

# kill_shims ends shims that our containerd started and left behind.
kill_shims() {
  local pid
  for pid in $(pgrep -f "containerd-shim-runc-v2.*-address ${CONTAINERD_SOCK}" || true); do
    kill -KILL "${pid}" 2>/dev/null || true
  done
}

# pod_processes prints the PIDs in the cgroups of this cluster's pods (the
# kubelet's pods directory names their UIDs).
pod_processes() {
  local uid
  for uid in $(ls "${LOCAL_UP_DIR}/kubelet/pods" 2>/dev/null); do
    find /sys/fs/cgroup -type d -name "pod${uid}" -exec find {} -name cgroup.procs \; 2>/dev/null |
      xargs -r cat 2>/dev/null || true
  done | sort -u
}

# kill_pod_processes ends container processes that outlived their shims
# (when containerd died before local-down), then removes their pods'
# cgroups.
kill_pod_processes() {
  local pid uid i
  for ((i = 0; i < 3; i++)); do
    for pid in $(pod_processes); do
      kill -KILL "${pid}" 2>/dev/null || true
    done
    [[ -z "$(pod_processes)" ]] && break
    sleep 0.5
  done
  for uid in $(ls "${LOCAL_UP_DIR}/kubelet/pods" 2>/dev/null); do
    find /sys/fs/cgroup -depth -type d -path "*/pod${uid}*" -exec rmdir {} \; 2>/dev/null || true
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

# our_loops prints "<device> <backing inode>" for the loop devices whose
# backing file is below the cluster dir (the e2e tests keep their disk
# images there). Run it before unmount_all: once a mount is detached, the
# kernel names a backing file relative to that mount only.
our_loops() {
  losetup -n -O NAME,BACK-INO,BACK-FILE 2>/dev/null | awk -v d="${LOCAL_UP_DIR}/" 'index($3, d) == 1 {print $1, $2}'
}

# detach_loops DEVICE-LIST: detaches them. A device still mounted is
# detached by the kernel when it is unmounted (autoclear).
detach_loops() {
  local dev ino
  while read -r dev ino; do
    [[ -n "${dev}" ]] || continue
    losetup -d "${dev}" 2>/dev/null || np::warn "could not detach ${dev} (backed by a file in ${LOCAL_UP_DIR})"
  done <<<"$1"
}

# attached DEVICE-LIST prints those still attached to the same file.
attached() {
  local dev ino
  while read -r dev ino; do
    [[ -n "${dev}" ]] || continue
    [[ "$(losetup -n -O BACK-INO "${dev}" 2>/dev/null | tr -d ' ')" == "${ino}" ]] && echo "${dev}"
  done <<<"$1"
  return 0
}

# check_clean LOOPS fails, naming what is left, if a process, mount, loop
# device, network namespace or iptables rule of this cluster remains.
check_clean() {
  local left=() name loops=$1
  for name in "${LOCAL_UP_DIR}"/pids/*; do
    [[ -f "${name}" ]] && np::cluster::alive "$(basename "${name}")" && left+=("process $(basename "${name}")")
  done
  [[ -n "$(pod_processes)" ]] && left+=("pod processes: $(pod_processes | tr '\n' ' ')")
  [[ -n "$(attached "${loops}")" ]] && left+=("loop devices: $(attached "${loops}" | tr '\n' ' ')")
  [[ -n "$(np::nodes::leftovers)" ]] && left+=("of the nodes: $(np::nodes::leftovers | tr '\n' ';')")
  awk -v d="${LOCAL_UP_DIR}" '$5 == d || index($5, d "/") == 1 {found=1} END {exit !found}' /proc/self/mountinfo &&
    left+=("mounts below ${LOCAL_UP_DIR}")
  ip link show "${CNI_BRIDGE}" >/dev/null 2>&1 && left+=("bridge ${CNI_BRIDGE}")
  if [[ -f "${LOCAL_UP_DIR}/iptables-before" ]] && [[ -n "$(np::netfilter::added "${LOCAL_UP_DIR}/iptables-before")" ]]; then
    left+=("iptables: $(np::netfilter::added "${LOCAL_UP_DIR}/iptables-before" | head -n 3 | tr '\n' ';')")
  fi
  ((${#left[@]} == 0)) || np::die "local-down left: ${left[*]}" "remove them by hand; the state is kept in ${LOCAL_UP_DIR}"
}

main() {
  [[ -d "${LOCAL_UP_DIR}" ]] || { np::log "no local cluster state in ${LOCAL_UP_DIR}; nothing to do"; return 0; }
  local loops
  loops=$(our_loops)$'\n'$(np::nodes::loops)
  stop kube-proxy
  stop kubelet
  stop_containers
  stop_nodes
  stop sshd
  stop registry
  stop kube-controller-manager
  stop kube-scheduler
  stop kube-apiserver
  stop etcd
  stop containerd
  kill_shims
  kill_pod_processes
  np::nodes::cleanup
  detach_loops "${loops}"
  unmount_all
  remove_netns
  np::netfilter::cleanup "${LOCAL_UP_DIR}/iptables-before"
  check_clean "${loops}"
  rm -rf "${LOCAL_UP_DIR}"
  np::log "local cluster stopped and cleaned up"
}

main "$@"
