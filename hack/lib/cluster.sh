#!/usr/bin/env bash
# Configuration and start-up of the local cluster's processes. Each process
# is started in the background with its log under ${LOCAL_UP_DIR}/logs and
# its PID under ${LOCAL_UP_DIR}/pids, which is all hack/local-down.sh needs.

NODE_NAME=${NODE_NAME:-nodeplug-node}
APISERVER_PORT=${APISERVER_PORT:-6443}
ETCD_PORT=${ETCD_PORT:-2379}
ETCD_PEER_PORT=${ETCD_PEER_PORT:-2380}
# 10249 and 10256: kube-proxy's metrics and health.
CLUSTER_PORTS=("${APISERVER_PORT}" "${ETCD_PORT}" "${ETCD_PEER_PORT}" 10248 10249 10250 10256 10257 10259)
CONTAINERD_SOCK=${LOCAL_UP_DIR}/run/containerd.sock
CNI_BRIDGE=nodeplug0
POD_CIDR=10.88.0.0/16
SHARED_DIR=${LOCAL_UP_DIR}/shared
FLEX_DIR=${LOCAL_UP_DIR}/flexvolume
# Extra flags for nodeplug's binaries, e.g. --experimental-flexvolume-discovery.
KUBELET_EXTRA_FLAGS=${KUBELET_EXTRA_FLAGS:-}
# Host utilities (glob patterns) that the kubelet must not find in its
# PATH, e.g. "mkfs.* mke2fs fsck* e2fsck blkid" to prove that mount
# utilities run in mount pods. Empty: the kubelet gets the usual PATH.
KUBELET_HIDDEN_UTILITIES=${KUBELET_HIDDEN_UTILITIES:-}
KCM_EXTRA_FLAGS=${KCM_EXTRA_FLAGS:-}
source "${NODEPLUG_ROOT}/hack/lib/node-config.sh"
source "${NODEPLUG_ROOT}/hack/lib/registry.sh"

np::cluster::node_ip() {
  ip -4 -o addr show scope global 2>/dev/null | awk '{sub(/\/.*/, "", $4); print $4; exit}'
}

# np::cluster::start NAME COMMAND...: run COMMAND in the background. It
# returns once the child has exec'd COMMAND: until then /proc/PID/cmdline
# is this shell's, and np::cluster::pid would take a running process for a
# dead one (the "exited during start-up" flake).
np::cluster::start() {
  local name=$1 pid shell i
  shift
  "$@" >"${LOCAL_UP_DIR}/logs/${name}.log" 2>&1 &
  pid=$!
  echo "${pid}" >"${LOCAL_UP_DIR}/pids/${name}"
  shell=$(readlink "/proc/$$/exe")
  for ((i = 0; i < 200; i++)); do
    [[ "$(readlink "/proc/${pid}/exe" 2>/dev/null)" == "${shell}" ]] || break
    sleep 0.05
  done
  np::log "started ${name} (pid ${pid}), log ${LOCAL_UP_DIR}/logs/${name}.log"
}

# np::cluster::pid NAME prints NAME's PID if that process is still ours:
# alive, and with this cluster's directory on its command line (so that a
# recycled PID is never taken for it).
np::cluster::pid() {
  local pid
  pid=$(cat "${LOCAL_UP_DIR}/pids/$1" 2>/dev/null) || return 1
  [[ "${pid}" =~ ^[0-9]+$ ]] || return 1
  tr '\0' ' ' 2>/dev/null <"/proc/${pid}/cmdline" | grep -qF "${LOCAL_UP_DIR}" || return 1
  echo "${pid}"
}

np::cluster::alive() { np::cluster::pid "$1" >/dev/null; }

# np::cluster::await NAME SECONDS CHECK...: wait for CHECK while NAME runs.
np::cluster::await() {
  local name=$1 timeout=$2 deadline
  shift 2
  deadline=$((SECONDS + timeout))
  until "$@" >/dev/null 2>&1; do
    np::cluster::alive "${name}" || np::die "${name} exited during start-up" \
      "see the end of ${LOCAL_UP_DIR}/logs/${name}.log: $(tail -n 3 "${LOCAL_UP_DIR}/logs/${name}.log" | tr '\n' ' ' | cut -c1-400)"
    ((SECONDS < deadline)) || np::die "${name} was not ready after ${timeout} s" "see ${LOCAL_UP_DIR}/logs/${name}.log"
    sleep 0.2
  done
  np::log "${name} is ready"
}

# np::cluster::containerd_built dies unless hack/build.sh built containerd
# (np::build::containerd): the cluster never falls back to the host's.
# local-up checks it before it starts anything.
np::cluster::containerd_built() {
  [[ -x "${CONTAINERD_BIN_DIR}/containerd" && -x "${CONTAINERD_BIN_DIR}/containerd-shim-runc-v2" ]] ||
    np::die "${CONTAINERD_BIN_DIR} has no containerd and runc shim" \
      "run hack/build.sh (or local-up without SKIP_BUILD=1); it builds them from hack/tools/containerd"
}

# np::cluster::containerd_conf FILE DIR SOCK CNI_DIR [TTRPC]: a containerd
# configuration with its root and state in DIR, its socket SOCK (and ttrpc
# socket TTRPC when given) and its CNI configuration in CNI_DIR, pulling
# ${LOCAL_REGISTRY} from the local registry (DIR/certs.d). The host's
# node and every namespaced node use it. containerd 2.x reads this version 2
# file and migrates it; CDI is on by default (specs in /etc/cdi and
# /var/run/cdi).
np::cluster::containerd_conf() {
  local file=$1 dir=$2 sock=$3 cni=$4 ttrpc=${5:-} ttrpc_section=""
  [[ -z "${ttrpc}" ]] || ttrpc_section=$'\n[ttrpc]\n  address = "'"${ttrpc}"'"'
  cat >"${file}" <<TOML
version = 2
root = "${dir}/root"
state = "${dir}/state"
[grpc]
  address = "${sock}"${ttrpc_section}
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "${PAUSE_IMAGE}"
  # This VM's bounding set lacks CAP_SYS_RESOURCE: negative oom_score_adj fails.
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "${cni}"
  [plugins."io.containerd.grpc.v1.cri".registry]
    config_path = "${dir}/certs.d"
TOML
  np::registry::hosts_toml "${dir}/certs.d"
}

# np::cluster::cni_conf FILE SUBNET [IPAM_DIR]: the bridge and portmap CNI
# configuration for pods in SUBNET (host-local IPAM state in IPAM_DIR when
# given, else the plugin's default).
np::cluster::cni_conf() {
  local file=$1 subnet=$2 data=""
  [[ -z "${3:-}" ]] || data='"dataDir": "'"$3"'", '
  cat >"${file}" <<JSON
{"cniVersion": "1.0.0", "name": "nodeplug", "plugins": [
  {"type": "bridge", "bridge": "${CNI_BRIDGE}", "isGateway": true, "ipMasq": false, "hairpinMode": true,
   "ipam": {"type": "host-local", ${data}"ranges": [[{"subnet": "${subnet}"}]], "routes": [{"dst": "0.0.0.0/0"}]}},
  {"type": "portmap", "capabilities": {"portMappings": true}}
]}
JSON
}

np::cluster::write_configs() {
  local conf=${LOCAL_UP_DIR}/conf
  mkdir -p "${conf}/cni" "${FLEX_DIR}"
  np::cluster::containerd_conf "${conf}/containerd.toml" "${LOCAL_UP_DIR}/containerd" "${CONTAINERD_SOCK}" "${conf}/cni"
  np::cluster::cni_conf "${conf}/cni/10-nodeplug.conflist" "${POD_CIDR}"
  np::cluster::kube_configs "${conf}"
}

# np::cluster::kube_configs DIR: the kubelet and kube-proxy configurations
# of the node on the host (NODES=1) in DIR. Its flex plugin dir is below
# the cluster dir, not upstream's default, which is the host's.
np::cluster::kube_configs() {
  np::nodeconf::kubelet "$1/kubelet.yaml" "${CONTAINERD_SOCK}" "${LOCAL_UP_DIR}/pki/kubelet-serving" \
    "${LOCAL_UP_DIR}/pod-logs" "${FLEX_DIR}"
  np::nodeconf::kube_proxy "$1/kube-proxy.yaml" "${LOCAL_UP_DIR}/pki/kube-proxy.kubeconfig" "${NODE_NAME}"
}

np::cluster::start_containerd() {
  mkdir -p "${LOCAL_UP_DIR}/run"
  np::cluster::start containerd "${CONTAINERD_BIN_DIR}/containerd" --config "${LOCAL_UP_DIR}/conf/containerd.toml"
  np::cluster::await containerd 30 ctr --address "${CONTAINERD_SOCK}" version
}

np::cluster::start_etcd() {
  np::cluster::start etcd "${BIN_DIR}/etcd" --name nodeplug --data-dir "${LOCAL_UP_DIR}/etcd" \
    --listen-client-urls "http://127.0.0.1:${ETCD_PORT}" --advertise-client-urls "http://127.0.0.1:${ETCD_PORT}" \
    --listen-peer-urls "http://127.0.0.1:${ETCD_PEER_PORT}" --initial-advertise-peer-urls "http://127.0.0.1:${ETCD_PEER_PORT}" \
    --initial-cluster "nodeplug=http://127.0.0.1:${ETCD_PEER_PORT}" --log-level warn
  np::cluster::await etcd 30 curl -sf "http://127.0.0.1:${ETCD_PORT}/health"
}

np::cluster::start_apiserver() {
  local pki=${LOCAL_UP_DIR}/pki
  np::cluster::start kube-apiserver "${BIN_DIR}/kube-apiserver" \
    --etcd-servers "http://127.0.0.1:${ETCD_PORT}" --secure-port "${APISERVER_PORT}" \
    --bind-address 0.0.0.0 --advertise-address "${NODE_IP}" \
    --tls-cert-file "${pki}/apiserver.crt" --tls-private-key-file "${pki}/apiserver.key" \
    --client-ca-file "${pki}/ca.crt" --authorization-mode Node,RBAC --allow-privileged=true \
    --service-account-key-file "${pki}/sa.pub" --service-account-signing-key-file "${pki}/sa.key" \
    --service-account-issuer https://kubernetes.default.svc.cluster.local \
    --service-cluster-ip-range 10.0.0.0/24 \
    --kubelet-client-certificate "${pki}/apiserver-kubelet-client.crt" \
    --kubelet-client-key "${pki}/apiserver-kubelet-client.key" \
    --kubelet-certificate-authority "${pki}/ca.crt" \
    --kubelet-preferred-address-types InternalIP,Hostname \
    --feature-gates CSIVolumeHealth=true
  # CSIVolumeHealth: the local PV master writes claims' status.healthStatus.
  # /readyz must answer HTTP 200: its body says "ok" for parts even while failing.
  np::cluster::await kube-apiserver 90 curl -sf --cacert "${pki}/ca.crt" --cert "${pki}/admin.crt" \
    --key "${pki}/admin.key" "https://127.0.0.1:${APISERVER_PORT}/readyz"
}

np::cluster::start_scheduler() {
  np::cluster::start kube-scheduler "${BIN_DIR}/kube-scheduler" \
    --kubeconfig "${LOCAL_UP_DIR}/pki/kube-scheduler.kubeconfig" --leader-elect=false
}

# np::cluster::start_kube_proxy starts upstream's kube-proxy (iptables
# mode), so that pods reach ClusterIP services such as kubernetes.default.
np::cluster::start_kube_proxy() {
  np::cluster::start kube-proxy "${BIN_DIR}/kube-proxy" --config "${LOCAL_UP_DIR}/conf/kube-proxy.yaml"
  np::cluster::await kube-proxy 60 curl -sf "http://127.0.0.1:10256/healthz"
}

np::cluster::start_controller_manager() {
  local pki=${LOCAL_UP_DIR}/pki
  # shellcheck disable=SC2086 # KCM_EXTRA_FLAGS is a list of flags.
  np::cluster::start kube-controller-manager "${BIN_DIR}/kube-controller-manager" \
    --kubeconfig "${pki}/kube-controller-manager.kubeconfig" \
    --authentication-kubeconfig "${pki}/kube-controller-manager.kubeconfig" \
    --authorization-kubeconfig "${pki}/kube-controller-manager.kubeconfig" \
    --use-service-account-credentials=true --leader-elect=false \
    --root-ca-file "${pki}/ca.crt" --service-account-private-key-file "${pki}/sa.key" \
    --cluster-signing-cert-file "${pki}/ca.crt" --cluster-signing-key-file "${pki}/ca.key" \
    --flex-volume-plugin-dir "${FLEX_DIR}" ${KCM_EXTRA_FLAGS}
  np::cluster::await kube-controller-manager 60 curl -skf "https://127.0.0.1:10257/healthz"
}

# np::cluster::kubelet_path prints the PATH the kubelet runs with. With
# KUBELET_HIDDEN_UTILITIES set, the sbin directories are replaced by one of
# links to every sbin program except those.
np::cluster::kubelet_path() {
  if [[ -z "${KUBELET_HIDDEN_UTILITIES}" ]]; then
    echo "${PATH}"
    return
  fi
  local dir=${LOCAL_UP_DIR}/kubelet-sbin f name pattern hidden
  rm -rf "${dir}" && mkdir -p "${dir}"
  for f in /usr/local/sbin/* /usr/sbin/*; do
    [[ -x "${f}" ]] || continue
    name=${f##*/} hidden=0
    for pattern in ${KUBELET_HIDDEN_UTILITIES}; do
      # shellcheck disable=SC2053 # the pattern is a glob on purpose
      [[ "${name}" == ${pattern} ]] && hidden=1
    done
    ((hidden)) || [[ -e "${dir}/${name}" ]] || ln -s "${f}" "${dir}/${name}"
  done
  echo "${dir}:/usr/local/bin:/usr/bin:/bin"
}

np::cluster::start_kubelet() {
  mkdir -p "${LOCAL_UP_DIR}/kubelet" "${LOCAL_UP_DIR}/pod-logs"
  local path
  path=$(np::cluster::kubelet_path)
  # shellcheck disable=SC2086 # KUBELET_EXTRA_FLAGS is a list of flags.
  np::cluster::start kubelet env PATH="${path}" "${BIN_DIR}/kubelet" --config "${LOCAL_UP_DIR}/conf/kubelet.yaml" \
    --kubeconfig "${LOCAL_UP_DIR}/pki/kubelet.kubeconfig" --root-dir "${LOCAL_UP_DIR}/kubelet" \
    --hostname-override "${NODE_NAME}" --node-ip "${NODE_IP}" ${KUBELET_EXTRA_FLAGS}
  np::cluster::await kubelet 60 curl -sf "http://127.0.0.1:10248/healthz"
}

# np::cluster::wait_jobs WHAT PID...: waits for the background jobs PID...
# (each printed why it failed), and fails naming WHAT if one failed.
np::cluster::wait_jobs() {
  local what=$1 pid rc=0
  shift
  for pid in "$@"; do
    wait "${pid}" || rc=1
  done
  ((rc == 0)) || np::die "${what} failed" "see the errors above and ${LOCAL_UP_DIR}/logs"
}
