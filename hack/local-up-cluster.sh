#!/usr/bin/env bash
# Brings up a real single-node cluster whose kubelet and
# kube-controller-manager are nodeplug's builds: installs what is missing
# (apt), builds the binaries and images, writes certificates, starts etcd,
# kube-apiserver, kube-scheduler, kube-controller-manager, containerd and
# the kubelet and kube-proxy, and waits until the node is Ready and a pod
# runs. If it fails half way, the processes it started keep running for
# inspection; 'make local-down' removes everything.
#
# With NODES=N (N > 1) it brings up N nodes instead, each in Linux
# namespaces of its own (hack/lib/nodes.sh, docs/local-cluster.md), with the
# control plane on the host; NODES=1 (the default) runs the node on the host.
#
# Environment: NODES, NODE_NAME, KUBELET_EXTRA_FLAGS, KCM_EXTRA_FLAGS,
# SKIP_BUILD=1 (reuse ${BIN_DIR}), LOCAL_UP_DIR, LOCAL_UP_SSH=false (no SSH
# servers in a multi-node cluster), DEFAULT_STORAGECLASS=false (no default
# StorageClass, hack/lib/default-storageclass.sh), LOCAL_UP_DNS=false (no
# cluster DNS: no CoreDNS behind the kubelets' clusterDNS 10.0.0.10,
# hack/lib/cluster-dns.sh).
set -o errexit -o nounset -o pipefail

source "$(dirname "${BASH_SOURCE[0]}")/lib/init.sh"
source "${NODEPLUG_ROOT}/hack/lib/build.sh"
source "${NODEPLUG_ROOT}/hack/lib/cluster.sh"
source "${NODEPLUG_ROOT}/hack/lib/preflight.sh"
source "${NODEPLUG_ROOT}/hack/lib/pki.sh"
source "${NODEPLUG_ROOT}/hack/lib/images.sh"
source "${NODEPLUG_ROOT}/hack/lib/netfilter.sh"
source "${NODEPLUG_ROOT}/hack/lib/nodes.sh"
source "${NODEPLUG_ROOT}/hack/lib/node-services.sh"
source "${NODEPLUG_ROOT}/hack/lib/default-storageclass.sh"
source "${NODEPLUG_ROOT}/hack/lib/cluster-dns.sh"
source "${NODEPLUG_ROOT}/hack/lib/helm.sh"

export KUBECONFIG=${LOCAL_UP_DIR}/pki/admin.kubeconfig
kubectl() { "${BIN_DIR}/kubectl" "$@"; }

main() {
  local started=${SECONDS}
  [[ "${NODES}" =~ ^[1-9][0-9]?$ ]] || np::die "NODES=${NODES} is not a number of nodes" "use NODES=1 (the default), 2, 3, ..."
  np::preflight::root
  np::preflight::local_up_dir "${LOCAL_UP_DIR}"
  # What local-up creates is root's and not writable by others (sshd's
  # StrictModes ignores keys in a directory that is), whatever the caller's umask.
  umask 022
  mkdir -p "${OUT_DIR}"
  np::preflight::stale
  np::preflight::apt
  np::preflight::fuse
  np::preflight::ports
  ((NODES == 1)) || np::nodes::preflight
  np::default_sc::enabled || true # a bad DEFAULT_STORAGECLASS stops here, before the build
  np::dns::enabled || true        # and a bad LOCAL_UP_DNS
  [[ "${SKIP_BUILD:-0}" == 1 ]] || np::build::all
  # The chart is pushed to the local registry as OCI (2 s warm).
  np::helm::build
  np::cluster::containerd_built
  ((NODES == 1)) || [[ -x "${BIN_DIR}/crictl" ]] ||
    np::warn "${BIN_DIR}/crictl is missing: the nodes' crictl will not run (upstream's stale-subpath specs need it); run hack/build.sh"
  NODE_IP=$(np::cluster::node_ip)
  [[ -n "${NODE_IP}" ]] || np::die "no global IPv4 address found for the node" "configure a network interface"

  ! np::default_sc::enabled || np::default_sc::check_paths
  mkdir -p "${LOCAL_UP_DIR}"/{logs,pids}
  # Remember the network namespaces that are not ours, for local-down.
  ls /run/netns 2>/dev/null >"${LOCAL_UP_DIR}/netns-before" || true
  np::netfilter::snapshot "${LOCAL_UP_DIR}/iptables-before"
  trap half_up EXIT
  np::pki::generate
  np::registry::cert
  np::images::build
  np::default_sc::images "${LOCAL_UP_DIR}/images"
  np::cluster::write_configs
  # Root is a private mount here (no systemd); Bidirectional propagation
  # needs a shared source.
  mkdir -p "${SHARED_DIR}"
  mount --bind "${SHARED_DIR}" "${SHARED_DIR}"
  mount --make-rshared "${SHARED_DIR}"
  if ((NODES > 1)); then
    up_nodes "${started}"
    trap - EXIT
    return
  fi

  local launched=${SECONDS}
  np::registry::start
  np::cluster::start_containerd
  np::images::import "${LOCAL_UP_DIR}"/images/*.tar
  publish
  np::cluster::start_etcd
  np::cluster::start_apiserver
  mount_pod_rbac
  np::cluster::start_scheduler
  np::cluster::start_controller_manager
  np::default_sc::apply
  np::dns::apply
  np::cluster::start_kubelet
  np::wait_for 120 "node ${NODE_NAME}" \
    kubectl wait --for=condition=Ready "node/${NODE_NAME}" --timeout=1s ||
    np::die "node ${NODE_NAME} did not become Ready" "see ${LOCAL_UP_DIR}/logs/kubelet.log"
  local ready=$((SECONDS - launched))
  np::cluster::start_kube_proxy
  np::wait_for 60 "default service account" kubectl get serviceaccount default ||
    np::die "the default service account was not created" "see ${LOCAL_UP_DIR}/logs/kube-controller-manager.log"
  smoke_pod
  np::default_sc::await
  np::dns::await
  cat <<MSG

Local cluster is up (node Ready ${ready} s after launch, $((SECONDS - started)) s in all).
  export KUBECONFIG=${KUBECONFIG}
  export PATH=${BIN_DIR}:${CONTAINERD_BIN_DIR}:\$PATH
Logs: ${LOCAL_UP_DIR}/logs   Stop it with: make local-down
MSG
  echo "${ready}" >"${LOCAL_UP_DIR}/node-ready-seconds"
  trap - EXIT
}

# up_nodes STARTED: the rest of main for NODES > 1. The nodes are created
# and started at the same time, each in a background job: its namespaces,
# its containerd, then its kubelet and kube-proxy (which wait for the
# apiserver), then the images, while etcd, the apiserver and the rest of
# the control plane start on the host.
up_nodes() {
  local started=$1 i jobs=() names=() nodes=()
  mkdir -p "${NODES_DIR}"
  NODES_KUBELET_PATH=$(np::cluster::kubelet_path)
  np::ssh::keys
  for ((i = 1; i <= NODES; i++)); do
    np::nodes::write_configs "${i}"
    np::services::write "${i}"
    names+=("$(np::nodes::name "${i}")")
    nodes+=("node/$(np::nodes::name "${i}")")
  done
  local launched=${SECONDS}
  np::nodes::host_setup
  for ((i = 1; i <= NODES; i++)); do
    (
      set -o errexit
      np::nodes::create "${i}" "${NODES}"
      np::nodes::start_services "${i}"
      np::nodes::import "${i}"
    ) &
    jobs+=($!)
  done
  NODE_JOBS=("${jobs[@]}")
  np::registry::start
  # The pushes run beside the control plane's start; the nodes import
  # their images and need none of them.
  publish &
  local publishing=$!
  np::cluster::start_etcd
  np::cluster::start_apiserver
  mount_pod_rbac
  np::cluster::start_scheduler
  np::cluster::start_controller_manager
  np::ssh::start_control_plane
  np::default_sc::apply
  np::dns::apply
  np::cluster::wait_jobs "creating and starting the nodes (namespaces, containerd, kubelet, kube-proxy, images)" "${jobs[@]}"
  np::log "images imported into every node"
  for ((i = 1; i <= NODES; i++)); do
    np::nodes::await_healthz "${i}" kubelet 10248
  done
  np::wait_for 120 "nodes ${names[*]}" kubectl wait --for=condition=Ready "${nodes[@]}" --timeout=1s ||
    np::die "not every node became Ready" "kubectl get nodes; see ${LOCAL_UP_DIR}/logs/kubelet-*.log"
  local ready=$((SECONDS - launched))
  for ((i = 1; i <= NODES; i++)); do
    np::nodes::await_healthz "${i}" kube-proxy 10256
  done
  np::wait_for 60 "default service account" kubectl get serviceaccount default ||
    np::die "the default service account was not created" "see ${LOCAL_UP_DIR}/logs/kube-controller-manager.log"
  smoke_pods "${names[@]}"
  wait "${publishing}" || np::die "pushing to the local registry failed" "see the errors above and ${LOCAL_UP_DIR}/logs/registry.log"
  for ((i = 1; i <= NODES; i++)); do
    np::ssh::await "$(np::nodes::ip "${i}")" "$(np::nodes::name "${i}")"
  done
  ! np::cluster::alive sshd || np::ssh::await 127.0.0.1 control-plane
  np::default_sc::await
  np::dns::await
  cat <<MSG

Local cluster is up with ${NODES} nodes (${names[*]}; all Ready ${ready} s after launch, $((SECONDS - started)) s in all).
  export KUBECONFIG=${KUBECONFIG}
  export PATH=${BIN_DIR}:${CONTAINERD_BIN_DIR}:\$PATH
Logs: ${LOCAL_UP_DIR}/logs   Stop it with: make local-down
MSG
  [[ "${LOCAL_UP_SSH}" == false ]] || cat <<MSG
SSH (as upstream's e2e framework reaches the nodes; the control plane is 127.0.0.1):
  export KUBE_SSH_KEY_PATH=${SSH_DIR}/id_ed25519 KUBE_SSH_USER=root
  ssh -i ${SSH_DIR}/id_ed25519 -o UserKnownHostsFile=${SSH_DIR}/known_hosts root@$(np::nodes::ip 1) systemctl status kubelet
MSG
  echo "${ready}" >"${LOCAL_UP_DIR}/node-ready-seconds"
}

# publish pushes the cluster's images and the local volume provisioner's
# chart to the local registry (docs/local-cluster.md, "The registry").
publish() {
  np::registry::push_images
  np::registry::push_chart "${NODEPLUG_ROOT}/deploy/helm/local-volume-provisioner" "${LOCAL_CHART_VERSION}" \
    "${LOCAL_REGISTRY}/nodeplug/local-volume-provisioner:dev" "${LOCAL_REGISTRY}/nodeplug" "${LOCAL_UP_DIR}/pki/ca.crt"
  np::registry::push_chart "${NODEPLUG_ROOT}/deploy/helm/mount-utilities" "${LOCAL_CHART_VERSION}" \
    "${LOCAL_REGISTRY}/nodeplug/mount-utilities:1" "${LOCAL_REGISTRY}/nodeplug" "${LOCAL_UP_DIR}/pki/ca.crt"
  np::log "charts pushed to oci://${LOCAL_REGISTRY}/nodeplug/charts (local-volume-provisioner, mount-utilities) --version ${LOCAL_CHART_VERSION}"
}

# half_up tells, when local-up fails after it has started creating state,
# that the cluster is half up and how to remove it.
NODE_JOBS=()
half_up() {
  local rc=$?
  ((rc == 0)) && return 0
  # The node jobs (namespaces, containerd, image imports) are finished,
  # not left running behind the message: their short-lived processes
  # (ctr images import) are no daemon local-down would stop.
  # The control plane's daemons are jobs of this shell too: wait for the
  # node jobs alone.
  if ((${#NODE_JOBS[@]} > 0)); then
    np::log "waiting for the node jobs that are still running"
    wait "${NODE_JOBS[@]}" 2>/dev/null || true
  fi
  printf '\nThe local cluster is half up: what started keeps running for inspection (logs in %s).\n' \
    "${LOCAL_UP_DIR}/logs" >&2
  printf "Remove it with 'make local-down'; 'make local-up' also cleans it up before it starts again.\n" >&2
  exit "${rc}"
}

# mount_pod_rbac applies deploy/mount-utilities' namespace and the
# controller-manager's RBAC before the controller-manager starts, when it
# runs with --experimental-mount-namespace: an operator applies them first.
mount_pod_rbac() {
  [[ "${KCM_EXTRA_FLAGS:-}" == *--experimental-mount-namespace* ]] || return 0
  local dir=${NODEPLUG_ROOT}/deploy/mount-utilities
  kubectl apply -f "${dir}/namespace.yaml" -f "${dir}/rbac-controller-manager.yaml" >/dev/null ||
    np::die "applying ${dir}/namespace.yaml and rbac-controller-manager.yaml failed" "see the kubectl error above"
  np::log "applied the mount-utilities namespace and the controller-manager's RBAC"
}

# smoke_pod proves that system pods can run: a busybox pod starts.
smoke_pod() {
  kubectl apply -f - >/dev/null <<YAML
apiVersion: v1
kind: Pod
metadata: {name: local-up-smoke, namespace: default}
spec:
  restartPolicy: Never
  terminationGracePeriodSeconds: 0
  containers:
  - {name: c, image: ${BUSYBOX_IMAGE}, imagePullPolicy: Never, command: ["true"]}
YAML
  np::wait_for 90 "smoke pod" bash -c "[[ \$('${BIN_DIR}/kubectl' get pod local-up-smoke -o jsonpath='{.status.phase}') == Succeeded ]]" ||
    np::die "a busybox pod did not run to completion" "kubectl describe pod local-up-smoke; see ${LOCAL_UP_DIR}/logs/kubelet.log"
  kubectl delete pod local-up-smoke --wait=false >/dev/null
}

# smoke_pods NODE...: a busybox pod runs to completion on each node.
smoke_pods() {
  local node pod pods=()
  for node in "$@"; do
    kubectl apply -f - >/dev/null <<YAML
apiVersion: v1
kind: Pod
metadata: {name: local-up-smoke-${node}, namespace: default}
spec:
  nodeName: ${node}
  restartPolicy: Never
  terminationGracePeriodSeconds: 0
  containers:
  - {name: c, image: ${BUSYBOX_IMAGE}, imagePullPolicy: Never, command: ["true"]}
YAML
    pods+=("local-up-smoke-${node}")
  done
  for pod in "${pods[@]}"; do
    np::wait_for 90 "smoke pod ${pod}" bash -c "[[ \$('${BIN_DIR}/kubectl' get pod ${pod} -o jsonpath='{.status.phase}') == Succeeded ]]" ||
      np::die "a busybox pod did not run to completion" "kubectl describe pod ${pod}; see ${LOCAL_UP_DIR}/logs/kubelet-*.log"
  done
  kubectl delete pod "${pods[@]}" --wait=false >/dev/null
}

main "$@"
