#!/usr/bin/env bash
# The nodes of a multi-node local cluster (NODES=N, N > 1; docs/local-cluster.md).
# Each node is a set of new Linux namespaces on this machine: network, mount,
# PID (hack/tools/nodeinit is its PID 1) and UTS (the node's name). Its
# containerd, kubelet and kube-proxy run in them, started with nsenter. The
# control plane runs on the host as with one node. Everything a node owns is
# below ${LOCAL_UP_DIR}/nodes/<name>; what a node adds to the host (the
# bridge, the veth pairs, the routes, the kubelets' cgroup roots, empty mount
# points for upstream's default paths) is listed there for local-down.
# Source it after cluster.sh.

NODES=${NODES:-1}
# The bridge on the host that joins the nodes, and the nodes' network
# (TEST-NET-2, RFC 5737, so never a real network): the host is .1, node i
# is .(10+i). Node i's pods get 10.88.i.0/24, a part of ${POD_CIDR}.
NODE_BRIDGE=nodeplug-nodes
NODE_NET=198.51.100
NODE_HOST_IP=${NODE_NET}.1
NODES_DIR=${LOCAL_UP_DIR}/nodes
# What each node mounts over upstream's default paths in its own mount
# namespace: "<directory in the node's dir>:<path in the node>". /run holds
# the node's runtime state (containerd's shims, runc, the pods' network
# namespaces in /run/netns, the service manager's units), so that none of
# it lands in the host's /run. /mnt is the node's own, so that local disks
# (deploy/local-volume-provisioner's /mnt/fast-disks and /mnt/block-disks,
# the e2e tier's /mnt/disks) are a node's, never the host's. /usr/local/sbin
# holds the node's service manager, systemctl (hack/lib/node-services.sh),
# and its crictl.
# /etc/hosts is the host's with the node's own name added (sudo resolves it).
# The kubelet's flex plugin dir in a node: upstream's default.
NODE_FLEX_DIR=/usr/libexec/kubernetes/kubelet-plugins/volume/exec
NODE_MOUNTS=(kubelet:/var/lib/kubelet
  "flexvolume:${NODE_FLEX_DIR}"
  mnt:/mnt tmp:/tmp run:/run sbin:/usr/local/sbin hosts:/etc/hosts)

# np::nodes::hidden_paths: prints, one per line and outer first, those of
# the cluster dir and the binary dir that lie under a path a node mounts
# over (NODE_MOUNTS), such as a checkout under /tmp: each node mounts them
# again at the same path (np::nodes::setup_inside), so that its processes
# find their configuration and binaries there.
np::nodes::hidden_paths() {
  local m p d
  for p in "${LOCAL_UP_DIR}" "${BIN_DIR}"; do
    d=$(realpath -m "${p}")
    for m in "${NODE_MOUNTS[@]}"; do
      if [[ "${d}/" == "${m#*:}/"* ]]; then
        echo "${d}"
        break
      fi
    done
  done | sort -u
}

# np::nodes::preflight fails, before local-up changes anything, when the
# nodes' bridge exists: a cluster of several nodes is running, from this
# checkout or another (local-down of this one would find nothing of it).
np::nodes::preflight() {
  ip link show "${NODE_BRIDGE}" >/dev/null 2>&1 || return 0
  np::die "the bridge ${NODE_BRIDGE} of a multi-node local cluster exists" \
    "a cluster is running, maybe from another checkout: run 'make local-down' in that checkout (ps -C nodeinit -o args shows where it lives)"
}

np::nodes::name() { echo "${NODE_NAME}-$1"; }
np::nodes::ip() { echo "${NODE_NET}.$((10 + $1))"; }
np::nodes::pod_cidr() { echo "10.88.$1.0/24"; }
np::nodes::dir() { echo "${NODES_DIR}/$(np::nodes::name "$1")"; }
np::nodes::sock() { echo "$(np::nodes::dir "$1")/containerd.sock"; }
# np::nodes::indexes prints the indexes of the nodes that local-up created
# (from their directories), so local-down needs no NODES.
np::nodes::indexes() {
  local d
  for d in "${NODES_DIR}"/*/index; do
    [[ -f "${d}" ]] && cat "${d}"
  done
  return 0
}
# np::nodes::init_pid I: the host PID of node I's init, if it runs.
np::nodes::init_pid() { np::cluster::pid "node-$(np::nodes::name "$1")"; }
# np::nodes::in I COMMAND...: runs COMMAND in all of node I's namespaces.
np::nodes::in() {
  local pid
  pid=$(np::nodes::init_pid "$1") || { np::warn "node $(np::nodes::name "$1") is not running"; return 1; }
  shift
  nsenter --target "${pid}" --mount --net --uts --pid -- "$@"
}

# np::nodes::mkdir_host DIR: creates DIR on the host if missing, recording
# each directory it creates so that local-down removes them again.
np::nodes::mkdir_host() {
  local dir=$1 missing=()
  while [[ ! -e "${dir}" ]]; do
    missing=("${dir}" "${missing[@]}")
    dir=$(dirname "${dir}")
  done
  for dir in "${missing[@]}"; do
    mkdir "${dir}" && echo "${dir}" >>"${NODES_DIR}/host-dirs"
  done
  return 0
}

# np::nodes::write_configs I: node I's containerd, CNI, kubelet and
# kube-proxy configurations, and its certificates and kubeconfigs.
np::nodes::write_configs() {
  local i=$1 name dir ip pki=${LOCAL_UP_DIR}/pki
  name=$(np::nodes::name "${i}") dir=$(np::nodes::dir "${i}") ip=$(np::nodes::ip "${i}")
  mkdir -p "${dir}/pod-logs"
  np::nodes::base_files "${i}"
  np::nodes::kube_configs "${i}"
  np::pki::cert "kubelet-serving-${name}" "${name}" "" "DNS:${name},DNS:localhost,IP:127.0.0.1,IP:${ip}"
  np::pki::cert "kubelet-${name}" "system:node:${name}" system:nodes
  rm -f "${pki}"/*.csr "${pki}"/*.ext
  # The nodes reach the apiserver at the host's address (routed over the
  # bridge); the apiserver's certificate already names it.
  np::nodes::kubeconfig "${dir}/kubelet.kubeconfig" "kubelet-${name}"
  np::nodes::kubeconfig "${dir}/kube-proxy.kubeconfig" kube-proxy
}

# np::nodes::base_files I: what every node I holds before it starts, a
# local-up node or a kubeadm-up one: a directory for each of NODE_MOUNTS,
# its systemctl and crictl, its hosts file, name and index, and its
# containerd and CNI configurations.
np::nodes::base_files() {
  local i=$1 name dir m
  name=$(np::nodes::name "${i}") dir=$(np::nodes::dir "${i}")
  for m in "${NODE_MOUNTS[@]}"; do
    [[ "${m%%:*}" == hosts ]] || mkdir -p "${dir}/${m%%:*}"
  done
  mkdir -p "${dir}"/{cni,containerd,mnt/disks}
  ln -sfn "${BIN_DIR}/systemctl" "${dir}/sbin/systemctl"
  np::nodes::crictl "${dir}"
  { cat /etc/hosts; echo "$(np::nodes::ip "${i}") ${name}"; } >"${dir}/hosts"
  chmod 1777 "${dir}/tmp"
  echo "${i}" >"${dir}/index"
  echo "${name}" >"${dir}/name"
  np::cluster::containerd_conf "${dir}/containerd.toml" "${dir}/containerd" "${dir}/containerd.sock" "${dir}/cni" \
    "${dir}/containerd.sock.ttrpc"
  np::cluster::cni_conf "${dir}/cni/10-nodeplug.conflist" "$(np::nodes::pod_cidr "${i}")" "${dir}/ipam"
}

# np::nodes::crictl DIR: the node's crictl (DIR/sbin/crictl, in the node's
# PATH) with its configuration (DIR/crictl.yaml): the crictl
# hack/tools/cri-tools pins, talking to the node's containerd as crictl on
# a kubeadm or kind node talks to its runtime. Upstream's specs run it on a
# node (`crictl ps`, `crictl stop`) over SSH or nsenter.
np::nodes::crictl() {
  local dir=$1
  printf 'runtime-endpoint: unix://%s\nimage-endpoint: unix://%s\n' "${dir}/containerd.sock" "${dir}/containerd.sock" \
    >"${dir}/crictl.yaml"
  printf '#!/bin/sh\n# crictl on this node (written by local-up).\nexec %q --config %q "$@"\n' \
    "${BIN_DIR}/crictl" "${dir}/crictl.yaml" >"${dir}/sbin/crictl"
  chmod 0755 "${dir}/sbin/crictl"
}

# np::nodes::kube_configs I: node I's kubelet and kube-proxy
# configurations in its dir. The flex plugin dir is upstream's default (the
# node's own, mounted in its mount namespace, as is the root dir).
np::nodes::kube_configs() {
  local name dir
  name=$(np::nodes::name "$1") dir=$(np::nodes::dir "$1")
  np::nodeconf::kubelet "${dir}/kubelet.yaml" "${dir}/containerd.sock" "${LOCAL_UP_DIR}/pki/kubelet-serving-${name}" \
    "${dir}/pod-logs" "${NODE_FLEX_DIR}" "/${name}"
  np::nodeconf::kube_proxy "${dir}/kube-proxy.yaml" "${dir}/kube-proxy.kubeconfig" "${name}"
}

np::nodes::kubeconfig() { # FILE CERT
  local pki=${LOCAL_UP_DIR}/pki
  cat >"$1" <<KC
apiVersion: v1
kind: Config
clusters:
- cluster: {certificate-authority: ${pki}/ca.crt, server: "https://${NODE_IP}:${APISERVER_PORT}"}
  name: local
users:
- name: $2
  user: {client-certificate: ${pki}/$2.crt, client-key: ${pki}/$2.key}
contexts:
- context: {cluster: local, user: $2}
  name: local
current-context: local
KC
}

# np::nodes::cgroup_root I: creates node I's cgroup root (the kubelet needs
# it to exist) in every cgroup v1 hierarchy; local-down finds them by the
# node's name.
np::nodes::cgroup_root() {
  local name h d
  name=$(np::nodes::name "$1")
  for h in /sys/fs/cgroup/*; do
    [[ -d "${h}" && ! -L "${h}" && -f "${h}/cgroup.procs" && "${h}" != */unified ]] || continue
    d=${h}/${name}
    [[ -d "${d}" ]] || mkdir "${d}"
    if [[ -f "${h}/cpuset.cpus" ]]; then
      cat "${h}/cpuset.cpus" >"${d}/cpuset.cpus"
      cat "${h}/cpuset.mems" >"${d}/cpuset.mems"
    fi
  done
}

# np::nodes::host_setup: the bridge that joins the nodes to the host, and
# the mount points of upstream's default paths (missing on a host that
# never ran a kubelet; the nodes mount their own directories on them).
np::nodes::host_setup() {
  local m
  for m in "${NODE_MOUNTS[@]}"; do
    np::nodes::mkdir_host "${m#*:}"
  done
  # Recorded for local-down only once created: a bridge that exists already
  # is another cluster's (from another checkout), not this one's to remove.
  ip link add "${NODE_BRIDGE}" type bridge ||
    np::die "could not create the bridge ${NODE_BRIDGE}" "is a previous cluster's left, or one from another checkout running? run 'make local-down' there"
  echo "${NODE_BRIDGE}" >"${NODES_DIR}/bridge"
  ip addr add "${NODE_HOST_IP}/24" dev "${NODE_BRIDGE}"
  ip link set "${NODE_BRIDGE}" up
}

# np::nodes::setup_inside I N: runs in node I's mount, network and UTS
# namespaces (through np::nodes::in): mounts the node's directories over
# upstream's default paths (the kubelet's root dir shared, for
# Bidirectional mount propagation), and brings up its network: eth0 on the
# nodes' network, a default route to the host, and a route to every other
# node's pods through that node.
np::nodes::setup_inside() {
  set -o errexit -o nounset -o pipefail
  local i=$1 n=$2 dir=$3 ip=$4 host_ip=$5 net=$6 hidden=$7 m j p fd dir_fd kept=()
  shift 7
  # The node's directory, and a directory the mounts below would hide, are
  # held open and reached through /proc while those mounts are made (mount
  # must not resolve such a link by name), so that the node may lie under
  # one of the paths it mounts over (a checkout under /tmp).
  exec {dir_fd}<"${dir}"
  while read -r p; do
    [[ -n "${p}" ]] || continue
    exec {fd}<"${p}"
    kept+=("${fd}:${p}")
  done <<<"${hidden}"
  for m in "$@"; do
    mount --no-canonicalize --bind "/proc/$$/fd/${dir_fd}/${m%%:*}" "${m#*:}"
  done
  for m in "${kept[@]}"; do
    fd=${m%%:*} p=${m#*:}
    mkdir -p "${p}"
    mount --no-canonicalize --bind "/proc/$$/fd/${fd}" "${p}"
    exec {fd}<&-
  done
  exec {dir_fd}<&-
  # Every mount shared, as systemd makes a real node's root: Bidirectional
  # and HostToContainer propagation work below any path (the mount pods'
  # kubelet root dir, a local PV class directory anywhere). Peers stay in
  # the node: its namespace was made with private propagation.
  mount --make-rshared /
  ip link set lo up
  ip addr add "${ip}/24" dev eth0
  ip link set eth0 up
  ip route add default via "${host_ip}"
  for ((j = 1; j <= n; j++)); do
    ((j == i)) || ip route add "10.88.${j}.0/24" via "${net}.$((10 + j))"
  done
  echo 1 >/proc/sys/net/ipv4/ip_forward
}

# np::nodes::create I N: node I's namespaces with its init, its veth pair
# to the host's bridge, its mounts and network, and the host's route to its
# pods.
np::nodes::create() {
  local i=$1 n=$2 name dir ip init k
  name=$(np::nodes::name "${i}") dir=$(np::nodes::dir "${i}") ip=$(np::nodes::ip "${i}")
  np::nodes::cgroup_root "${i}"
  # --kill-child: the node dies with unshare; local-down stops the init.
  np::cluster::start "node-${name}" unshare --mount --net --pid --uts --fork --mount-proc \
    --propagation private --kill-child "${BIN_DIR}/nodeinit" -hostname "${name}" -tag "${dir}"
  for ((k = 0; k < 100; k++)); do
    init=$(pgrep -P "$(cat "${LOCAL_UP_DIR}/pids/node-${name}")" || true)
    [[ -n "${init}" && "$(readlink "/proc/${init}/exe" 2>/dev/null)" == "${BIN_DIR}/nodeinit" ]] && break
    init=""
    sleep 0.05
  done
  [[ -n "${init}" ]] || np::die "node ${name}'s init did not start" "see ${LOCAL_UP_DIR}/logs/node-${name}.log"
  echo "${init}" >"${LOCAL_UP_DIR}/pids/node-${name}"
  ip link add "npnode${i}" type veth peer name eth0 netns "${init}" ||
    np::die "could not create node ${name}'s veth pair"
  echo "npnode${i}" >>"${NODES_DIR}/veths"
  ip link set "npnode${i}" master "${NODE_BRIDGE}" up
  np::nodes::in "${i}" bash -c "$(declare -f np::nodes::setup_inside); np::nodes::setup_inside \"\$@\"" - \
    "${i}" "${n}" "${dir}" "${ip}" "${NODE_HOST_IP}" "${NODE_NET}" "$(np::nodes::hidden_paths)" "${NODE_MOUNTS[@]}" ||
    np::die "setting up node ${name}'s mounts and network failed" "see the errors above"
  ip route add "$(np::nodes::pod_cidr "${i}")" via "${ip}" dev "${NODE_BRIDGE}"
  np::log "created node ${name} (init pid ${init}, ip ${ip}, pods $(np::nodes::pod_cidr "${i}"))"
}

# np::nodes::start_services I: node I's units (hack/lib/node-services.sh)
# started in order: containerd (awaited), kubelet, kube-proxy, and sshd.
np::nodes::start_services() {
  np::services::host_proc "$1"
  np::services::start "$1" containerd
  np::nodes::await_containerd "$1"
  np::services::start "$1" kubelet
  np::services::start "$1" kube-proxy
  [[ "${LOCAL_UP_SSH}" == false ]] || np::services::start "$1" ssh
}

np::nodes::await_containerd() {
  local name
  name=$(np::nodes::name "$1")
  np::cluster::await "containerd-${name}" 30 ctr --address "$(np::nodes::sock "$1")" version
}

# np::nodes::import I: loads the images into node I's containerd.
np::nodes::import() {
  local f
  for f in "${LOCAL_UP_DIR}"/images/*.tar; do
    ctr --address "$(np::nodes::sock "$1")" -n k8s.io images import --no-unpack=false "${f}" >/dev/null ||
      np::die "importing ${f} into node $(np::nodes::name "$1")'s containerd failed"
  done
}

# np::nodes::await_healthz I COMPONENT PORT: waits for COMPONENT's /healthz
# on the node's loopback.
np::nodes::await_healthz() {
  local name
  name=$(np::nodes::name "$1")
  np::cluster::await "$2-${name}" 60 np::nodes::in "$1" curl -sf "http://127.0.0.1:$3/healthz"
}

# np::nodes::loops prints "<device> <backing inode>" for the loop devices
# whose backing file is a node's (below one of its mounts or the cluster
# dir), as seen from inside each running node: from the host, a file in a
# node's private mount has no path.
np::nodes::loops() {
  local i m prefixes
  for i in $(np::nodes::indexes); do
    np::nodes::init_pid "${i}" >/dev/null || continue
    prefixes="${LOCAL_UP_DIR}/"
    for m in "${NODE_MOUNTS[@]}"; do
      prefixes+=" ${m#*:}/"
    done
    np::nodes::in "${i}" losetup -n -O NAME,BACK-INO,BACK-FILE 2>/dev/null |
      awk -v p="${prefixes}" 'BEGIN {n = split(p, a, " ")} {for (k = 1; k <= n; k++) if (index($3, a[k]) == 1) {print $1, $2; next}}'
  done
  return 0
}

# np::nodes::leftovers prints what of the nodes is still on the host: a
# node's init, the bridge, a veth, a cgroup root, a directory made for a
# mount point.
np::nodes::leftovers() {
  [[ -d "${NODES_DIR}" ]] || return 0
  local i f line
  for i in $(np::nodes::indexes); do
    np::nodes::init_pid "${i}" >/dev/null && echo "node $(np::nodes::name "${i}")'s processes"
  done
  for f in bridge veths; do
    [[ -f "${NODES_DIR}/${f}" ]] || continue
    while read -r line; do
      ip link show "${line}" >/dev/null 2>&1 && echo "link ${line}"
    done <"${NODES_DIR}/${f}"
  done
  for line in $(np::nodes::cgroups); do
    echo "cgroup ${line}"
  done
  if [[ -f "${NODES_DIR}/host-dirs" ]]; then
    while read -r line; do
      [[ -d "${line}" ]] && echo "directory ${line}"
    done <"${NODES_DIR}/host-dirs"
  fi
  return 0
}

# np::nodes::cgroups prints the nodes' cgroup roots that exist, in every
# hierarchy (the cgroup v2 one of a hybrid host too, where runc adds them).
np::nodes::cgroups() {
  local f
  for f in "${NODES_DIR}"/*/name; do
    [[ -f "${f}" ]] || continue
    ls -d /sys/fs/cgroup/*/"$(cat "${f}")" 2>/dev/null || true
  done
}

# np::nodes::cleanup removes what the nodes added to the host, once their
# processes are gone (their namespaces, with the mounts, pod network
# namespaces and iptables rules in them, went with their last process): the
# pods' and the kubelets' cgroups, the veths and the bridge (and so the
# routes through it), and the mount-point directories local-up made.
np::nodes::cleanup() {
  [[ -d "${NODES_DIR}" ]] || return 0
  local line
  for line in $(np::nodes::cgroups); do
    find "${line}" -depth -type d -exec rmdir {} \; 2>/dev/null || true
  done
  for line in $(cat "${NODES_DIR}/veths" "${NODES_DIR}/bridge" 2>/dev/null); do
    ip link del "${line}" >/dev/null 2>&1 || true
  done
  if [[ -f "${NODES_DIR}/host-dirs" ]]; then
    tac "${NODES_DIR}/host-dirs" | while read -r line; do
      rmdir "${line}" 2>/dev/null || true
    done
  fi
  return 0
}
