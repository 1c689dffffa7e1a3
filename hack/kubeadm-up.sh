#!/usr/bin/env bash
# Brings up a kubeadm cluster of NODES (3) nodes on this machine, as an
# operator's existing cluster that nodeplug is installed on
# (docs/local-cluster.md, "A kubeadm cluster"; docs/install.md). The nodes
# are the local cluster's namespaced nodes (hack/lib/nodes.sh), each with
# its containerd and sshd; the control plane images (upstream's
# apiserver, scheduler, kube-proxy and etcd, nodeplug's controller-manager,
# the pause image) are built here and pushed to the local registry with
# nodeplug's own. nodeplug's kubelet is installed on each node by the
# commands of docs/install.md; node 1 runs `kubeadm init` with nodeplug's
# controller-manager flags in the ClusterConfiguration, the others `kubeadm
# join`. `make local-down` (or `make kubeadm-down`) removes it all.
#
# Environment: NODES, SKIP_BUILD=1 (reuse ${BIN_DIR}), LOCAL_UP_DIR,
# KCM_EXTRA_FLAGS (the controller-manager's nodeplug flags).
set -o errexit -o nounset -o pipefail

source "$(dirname "${BASH_SOURCE[0]}")/lib/init.sh"
source "${NODEPLUG_ROOT}/hack/lib/build.sh"
KCM_EXTRA_FLAGS=${KCM_EXTRA_FLAGS-"--experimental-flexvolume-discovery --experimental-mount-namespace=kube-mount"}
source "${NODEPLUG_ROOT}/hack/lib/cluster.sh"
source "${NODEPLUG_ROOT}/hack/lib/preflight.sh"
source "${NODEPLUG_ROOT}/hack/lib/pki.sh"
source "${NODEPLUG_ROOT}/hack/lib/images.sh"
source "${NODEPLUG_ROOT}/hack/lib/netfilter.sh"
source "${NODEPLUG_ROOT}/hack/lib/nodes.sh"
source "${NODEPLUG_ROOT}/hack/lib/node-services.sh"
source "${NODEPLUG_ROOT}/hack/lib/helm.sh"
source "${NODEPLUG_ROOT}/hack/lib/kubeadm-images.sh"
source "${NODEPLUG_ROOT}/hack/lib/kubeadm.sh"

export NODES=${NODES:-3}
NODE_MOUNTS+=("${KUBEADM_NODE_MOUNTS[@]}")
export KUBECONFIG=${LOCAL_UP_DIR}/pki/admin.kubeconfig
kubectl() { "${BIN_DIR}/kubectl" "$@"; }

main() {
  local started=${SECONDS} i jobs=()
  [[ "${NODES}" =~ ^[1-9]$ ]] || np::die "NODES=${NODES} is not a number of nodes from 1 to 9" "use NODES=3 (the default)"
  np::preflight::root
  np::preflight::local_up_dir "${LOCAL_UP_DIR}"
  mkdir -p "${OUT_DIR}"
  np::preflight::stale
  np::preflight::apt
  np::preflight::ports
  np::nodes::preflight
  [[ "${SKIP_BUILD:-0}" == 1 ]] || np::build::all
  np::helm::build
  np::cluster::containerd_built
  [[ -x "${BIN_DIR}/kubeadm" ]] || np::die "${BIN_DIR}/kubeadm is missing" "run hack/build.sh (or kubeadm-up without SKIP_BUILD=1)"
  NODE_IP=$(np::cluster::node_ip)
  mkdir -p "${LOCAL_UP_DIR}"/{logs,pids} "${NODES_DIR}"
  echo kubeadm >"${LOCAL_UP_DIR}/kind"
  ls /run/netns 2>/dev/null >"${LOCAL_UP_DIR}/netns-before" || true
  np::netfilter::snapshot "${LOCAL_UP_DIR}/iptables-before"
  trap half_up EXIT
  np::pki::ca
  np::registry::cert
  np::images::build
  np::kubeadm_images::build "${LOCAL_UP_DIR}/kubeadm-images"
  np::ssh::keys
  for ((i = 1; i <= NODES; i++)); do
    node_files "${i}"
  done
  local launched=${SECONDS}
  np::nodes::host_setup
  np::registry::start
  publish
  for ((i = 1; i <= NODES; i++)); do
    (
      set -o errexit
      np::nodes::create "${i}" "${NODES}"
      np::services::host_proc "${i}"
      np::services::start "${i}" containerd
      np::nodes::await_containerd "${i}"
      [[ "${LOCAL_UP_SSH}" == false ]] || np::services::start "${i}" ssh
      np::nodes::import "${i}"
      np::kubeadm::install_kubelet "${i}"
    ) &
    jobs+=($!)
  done
  NODE_JOBS=("${jobs[@]}")
  np::cluster::wait_jobs "creating the nodes and installing nodeplug's kubelet by docs/install.md" "${jobs[@]}"
  NODE_JOBS=()
  init_control_plane
  join_nodes
  local names=() nodes=()
  for ((i = 1; i <= NODES; i++)); do
    names+=("$(np::nodes::name "${i}")") && nodes+=("node/$(np::nodes::name "${i}")")
  done
  np::wait_for 180 "nodes ${names[*]}" kubectl wait --for=condition=Ready "${nodes[@]}" --timeout=1s ||
    np::die "not every node became Ready" "kubectl get nodes; see ${LOCAL_UP_DIR}/logs/kubelet-*.log"
  local ready=$((SECONDS - launched))
  kubectl -n kube-system rollout status deployment/coredns --timeout=180s >/dev/null ||
    np::die "CoreDNS did not become ready" "kubectl -n kube-system describe pods -l k8s-app=kube-dns"
  kubectl -n kube-system rollout status daemonset/kube-proxy --timeout=120s >/dev/null ||
    np::die "kube-proxy did not become ready" "kubectl -n kube-system describe pods -l k8s-app=kube-proxy"
  for ((i = 1; i <= NODES; i++)); do
    np::ssh::await "$(np::nodes::ip "${i}")" "$(np::nodes::name "${i}")"
  done
  echo "${ready}" >"${LOCAL_UP_DIR}/node-ready-seconds"
  trap - EXIT
  cat <<MSG

kubeadm cluster is up with ${NODES} nodes (${names[*]}; all Ready ${ready} s after launch, $((SECONDS - started)) s in all).
  export KUBECONFIG=${KUBECONFIG}
  export KUBE_SSH_KEY_PATH=${SSH_DIR}/id_ed25519 KUBE_SSH_USER=root
Logs: ${LOCAL_UP_DIR}/logs   Stop it with: make kubeadm-down
MSG
}

# node_files I: what node I holds before it starts: its directories,
# containerd and CNI configuration, crictl, the kubelet and kubeadm
# packages' files, the release tarball, the kubelet patch, and its units
# (containerd, sshd).
node_files() {
  local i=$1 dir
  dir=$(np::nodes::dir "${i}")
  np::nodes::base_files "${i}"
  np::kubeadm::package "${i}"
  np::kubeadm::tarball "${i}"
  np::kubeadm::patches "${i}"
  np::services::unit "${i}" containerd "containerd container runtime" 30s always "PATH=${PATH}" \
    "${CONTAINERD_BIN_DIR}/containerd" --config "${dir}/containerd.toml"
  if [[ "${LOCAL_UP_SSH}" != false ]]; then
    np::ssh::config "${dir}/sshd_config" "$(np::nodes::ip "${i}")" /run/sshd.pid
    mkdir -p "${dir}/run/sshd"
    np::services::unit "${i}" ssh "OpenBSD Secure Shell server" 10s on-failure "" /usr/sbin/sshd -D -e -f "${dir}/sshd_config"
  fi
}

# publish pushes the cluster's images, kubeadm's control plane images and
# the provisioner's chart to the local registry.
publish() {
  local f
  np::registry::push_images
  for f in "${LOCAL_UP_DIR}"/kubeadm-images/*.tar; do
    np::registry::push "${f}" >>"${LOCAL_UP_DIR}/logs/registry-push.log" ||
      np::die "pushing ${f##*/} to the local registry failed" "see ${LOCAL_UP_DIR}/logs/registry.log"
  done
  # kubeadm's CoreDNS is the local cluster's (build/coredns), at the tag
  # kubeadm asks for.
  np::registry::push "${LOCAL_UP_DIR}/images/coredns.tar" "${KUBEADM_IMAGE_REPO}/coredns:$(np::kubeadm_images::coredns_tag)" \
    >>"${LOCAL_UP_DIR}/logs/registry-push.log" || np::die "pushing CoreDNS for kubeadm to the local registry failed"
  np::registry::push_chart "${NODEPLUG_ROOT}/deploy/helm/local-volume-provisioner" "${LOCAL_CHART_VERSION}" \
    "${LOCAL_REGISTRY}/nodeplug/local-volume-provisioner:dev" "${LOCAL_REGISTRY}/nodeplug" "${LOCAL_UP_DIR}/pki/ca.crt"
  np::registry::push_chart "${NODEPLUG_ROOT}/deploy/helm/mount-utilities" "${LOCAL_CHART_VERSION}" \
    "${LOCAL_REGISTRY}/nodeplug/mount-utilities:1" "${LOCAL_REGISTRY}/nodeplug" "${LOCAL_UP_DIR}/pki/ca.crt"
}

# init_control_plane runs kubeadm init on node 1, with the cluster's CA
# (the one the registry's certificate is signed by) as kubeadm's.
init_control_plane() {
  local dir
  dir=$(np::nodes::dir 1)
  mkdir -p "${dir}/etc-kubernetes/pki"
  cp "${LOCAL_UP_DIR}/pki/ca.crt" "${LOCAL_UP_DIR}/pki/ca.key" "${dir}/etc-kubernetes/pki/"
  np::kubeadm::init_config >"${dir}/etc-kubernetes/kubeadm.yaml"
  np::log "kubeadm init on $(np::nodes::name 1), log ${LOCAL_UP_DIR}/logs/kubeadm-init.log"
  np::nodes::in 1 env PATH="/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" \
    kubeadm init --config /etc/kubernetes/kubeadm.yaml >"${LOCAL_UP_DIR}/logs/kubeadm-init.log" 2>&1 ||
    np::die "kubeadm init failed on $(np::nodes::name 1)" "see the end of ${LOCAL_UP_DIR}/logs/kubeadm-init.log"
  cp "${dir}/etc-kubernetes/admin.conf" "${KUBECONFIG}"
}

# join_nodes runs kubeadm join on nodes 2..N, all at once.
join_nodes() {
  local i cmd dir jobs=()
  ((NODES > 1)) || return 0
  cmd=$(np::nodes::in 1 kubeadm token create --print-join-command --kubeconfig /etc/kubernetes/admin.conf) ||
    np::die "kubeadm token create failed on $(np::nodes::name 1)"
  for ((i = 2; i <= NODES; i++)); do
    dir=$(np::nodes::dir "${i}")
    np::kubeadm::join_config "${i}" "${cmd}" >"${dir}/etc-kubernetes/kubeadm.yaml"
    (
      np::nodes::in "${i}" env PATH="/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" \
        kubeadm join --config /etc/kubernetes/kubeadm.yaml >"${LOCAL_UP_DIR}/logs/kubeadm-join-$(np::nodes::name "${i}").log" 2>&1 ||
        np::die "kubeadm join failed on $(np::nodes::name "${i}")" "see ${LOCAL_UP_DIR}/logs/kubeadm-join-$(np::nodes::name "${i}").log"
    ) &
    jobs+=($!)
  done
  np::cluster::wait_jobs "joining the nodes" "${jobs[@]}"
}

NODE_JOBS=()
half_up() {
  local rc=$?
  ((rc == 0)) && return 0
  ((${#NODE_JOBS[@]} == 0)) || wait "${NODE_JOBS[@]}" 2>/dev/null || true
  printf '\nThe kubeadm cluster is half up: what started keeps running for inspection (logs in %s).\n' "${LOCAL_UP_DIR}/logs" >&2
  printf "Remove it with 'make kubeadm-down'.\n" >&2
}

main "$@"
