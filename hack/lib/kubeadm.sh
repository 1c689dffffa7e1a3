#!/usr/bin/env bash
# A kubeadm cluster on the local cluster's nodes (make kubeadm-up,
# docs/local-cluster.md "A kubeadm cluster"): the nodes are the namespaced
# nodes of hack/lib/nodes.sh, with kubeadm's paths of their own; node 1
# runs `kubeadm init` with the control plane as static pods whose images
# come from the local registry, nodes 2..N `kubeadm join`; nodeplug's
# kubelet is installed on each by the block of docs/install.md marked
# install-kubelet, as written. Source it after nodes.sh, node-services.sh
# and registry.sh.

# What kubeadm and the kubelet package write or read, each node's own.
# /var/log too: each kubelet keeps its pods' logs in /var/log/pods and
# removes the directories of pods it does not know, another node's included.
KUBEADM_NODE_MOUNTS=(etc-kubernetes:/etc/kubernetes usr-local-bin:/usr/local/bin
  systemd-etc:/etc/systemd/system systemd-lib:/usr/lib/systemd/system var-lib-etcd:/var/lib/etcd var-log:/var/log)
KUBEADM_POD_SUBNET=10.88.0.0/16
KUBEADM_SERVICE_SUBNET=10.0.0.0/24
# The release version the nodes install (a tarball made from ${BIN_DIR}).
KUBEADM_NODEPLUG_VERSION=v0.0.0-kubeadm-up

# Preflight checks of kubeadm that cannot hold on a node made of
# namespaces of a host shared with others, each with why. Every other
# check must pass.
KUBEADM_IGNORED_PREFLIGHT=(
  # The nodes share the host's kernel and its cgroup v1 hierarchy; kubeadm's
  # system verification refuses cgroup v1 (the kubelet runs with
  # failCgroupV1: false, as the local cluster's do).
  SystemVerification
  # A network namespace has no bridge netfilter sysctls unless the host's
  # br_netfilter module is loaded; kube-proxy's rules do not depend on it
  # here (the pods' bridge is the node's own).
  FileContent--proc-sys-net-bridge-bridge-nf-call-iptables
  # The host may have swap; the kubelets run with failSwapOn: false.
  Swap
)

# np::kubeadm::install_block: the commands of docs/install.md's block
# marked install-kubelet. Dies if the doc lost the marker.
np::kubeadm::install_block() {
  local doc=${NODEPLUG_ROOT}/docs/install.md out
  out=$(awk '/<!-- install-kubelet:/ {m = 1; next} m == 1 && /^```sh$/ {m = 2; next} m == 2 && /^```$/ {exit} m == 2 {print}' "${doc}")
  [[ -n "${out}" ]] || np::die "docs/install.md has no block marked install-kubelet" "restore the marker above the kubelet's install commands"
  printf '%s\n' "${out}"
}

# np::kubeadm::package I: what the kubelet and kubeadm packages install on
# node I: the kubelet unit (Restart=always, as the package's) and kubeadm's
# drop-in, which reads kubeadm's flags file and /etc/default/kubelet and
# starts /usr/bin/kubelet (which nodeplug's drop-in replaces), and kubeadm
# in /usr/local/bin.
np::kubeadm::package() {
  local dir
  dir=$(np::nodes::dir "$1")
  mkdir -p "${dir}/systemd-lib/kubelet.service.d"
  cat >"${dir}/systemd-lib/kubelet.service" <<'UNIT'
[Unit]
Description=kubelet: The Kubernetes Node Agent
Wants=network-online.target
After=network-online.target

[Service]
ExecStart=/usr/bin/kubelet
Restart=always
StartLimitInterval=0
RestartSec=10

[Install]
WantedBy=multi-user.target
UNIT
  cat >"${dir}/systemd-lib/kubelet.service.d/10-kubeadm.conf" <<'UNIT'
[Service]
Environment="KUBELET_KUBECONFIG_ARGS=--bootstrap-kubeconfig=/etc/kubernetes/bootstrap-kubelet.conf --kubeconfig=/etc/kubernetes/kubelet.conf"
Environment="KUBELET_CONFIG_ARGS=--config=/var/lib/kubelet/config.yaml"
EnvironmentFile=-/var/lib/kubelet/kubeadm-flags.env
EnvironmentFile=-/etc/default/kubelet
ExecStart=
ExecStart=/usr/bin/kubelet $KUBELET_KUBECONFIG_ARGS $KUBELET_CONFIG_ARGS $KUBELET_KUBEADM_ARGS $KUBELET_EXTRA_ARGS
UNIT
  install -m 0755 "${BIN_DIR}/kubeadm" "${dir}/usr-local-bin/kubeadm"
}

# np::kubeadm::tarball I: the release tarball the install block unpacks,
# in node I's /tmp: nodeplug-<version>-linux-<arch>/bin/kubelet.
np::kubeadm::tarball() {
  local dir arch name
  dir=$(np::nodes::dir "$1") arch=$(dpkg --print-architecture)
  name=nodeplug-${KUBEADM_NODEPLUG_VERSION}-linux-${arch}
  mkdir -p "${dir}/tmp/release/${name}/bin"
  cp "${BIN_DIR}/kubelet" "${dir}/tmp/release/${name}/bin/kubelet"
  tar -C "${dir}/tmp/release" -czf "${dir}/tmp/release/${name}.tar.gz" "${name}"
  rm -rf "${dir:?}/tmp/release/${name}"
}

# np::kubeadm::install_kubelet I: runs the install block in node I, in the
# directory of the release tarball, with V set as the doc says.
np::kubeadm::install_kubelet() {
  local block
  block=$(np::kubeadm::install_block)
  np::nodes::in "$1" env V="${KUBEADM_NODEPLUG_VERSION}" PATH="/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" \
    bash -euo pipefail -c "cd /tmp/release && ${block}" >>"${LOCAL_UP_DIR}/logs/kubeadm-install-$(np::nodes::name "$1").log" 2>&1 ||
    np::die "docs/install.md's kubelet install failed on node $(np::nodes::name "$1")" \
      "see ${LOCAL_UP_DIR}/logs/kubeadm-install-$(np::nodes::name "$1").log"
}

# np::kubeadm::patches I: node I's kubelet configuration patch (kubeadm's
# patches directory): its own cgroup root, as the local cluster's nodes.
np::kubeadm::patches() {
  local dir name
  dir=$(np::nodes::dir "$1") name=$(np::nodes::name "$1")
  mkdir -p "${dir}/etc-kubernetes/patches"
  printf 'cgroupRoot: /%s\n' "${name}" >"${dir}/etc-kubernetes/patches/kubeletconfiguration+merge.yaml"
}

# np::kubeadm::node_registration I: the nodeRegistration of node I.
np::kubeadm::node_registration() {
  local dir name ip
  dir=$(np::nodes::dir "$1") name=$(np::nodes::name "$1") ip=$(np::nodes::ip "$1")
  cat <<YAML
nodeRegistration:
  name: ${name}
  criSocket: unix://${dir}/containerd.sock
  kubeletExtraArgs:
  - {name: node-ip, value: "${ip}"}
  ignorePreflightErrors: [$(IFS=,; echo "${KUBEADM_IGNORED_PREFLIGHT[*]}")]
patches:
  directory: /etc/kubernetes/patches
YAML
}

# np::kubeadm::init_config: node 1's `kubeadm init --config` file: the
# control plane from the local registry, nodeplug's controller-manager with
# its flags set through the ClusterConfiguration (docs/install.md), the
# kubelets' and kube-proxy's settings of the local cluster's nodes.
np::kubeadm::init_config() {
  local ip
  ip=$(np::nodes::ip 1)
  cat <<YAML
apiVersion: kubeadm.k8s.io/v1beta4
kind: InitConfiguration
localAPIEndpoint: {advertiseAddress: "${ip}", bindPort: 6443}
$(np::kubeadm::node_registration 1)
---
apiVersion: kubeadm.k8s.io/v1beta4
kind: ClusterConfiguration
kubernetesVersion: ${KUBE_VERSION}
imageRepository: ${KUBEADM_IMAGE_REPO}
controlPlaneEndpoint: "${ip}:6443"
networking: {podSubnet: "${KUBEADM_POD_SUBNET}", serviceSubnet: "${KUBEADM_SERVICE_SUBNET}", dnsDomain: cluster.local}
controllerManager:
  extraArgs:
$(for f in ${KCM_EXTRA_FLAGS}; do f=${f#--}; [[ "${f}" == *=* ]] || f+="=true"; printf '  - {name: %s, value: "%s"}\n' "${f%%=*}" "${f#*=}"; done)
---
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
failCgroupV1: false
cgroupDriver: cgroupfs
failSwapOn: false
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard: {"memory.available": "100Mi", "nodefs.available": "0%", "nodefs.inodesFree": "0%", "imagefs.available": "0%"}
---
apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
mode: iptables
conntrack: {maxPerCore: 0, min: 0, tcpEstablishedTimeout: 0s, tcpCloseWaitTimeout: 0s}
YAML
}

# np::kubeadm::join_config I COMMAND: node I's `kubeadm join --config`
# file, from the token and CA hash of COMMAND (kubeadm token create
# --print-join-command).
np::kubeadm::join_config() {
  local token hash endpoint
  read -r endpoint token hash < <(awk '{for (k = 1; k <= NF; k++) {if ($k == "join") e = $(k + 1); if ($k == "--token") t = $(k + 1); if ($k == "--discovery-token-ca-cert-hash") h = $(k + 1)}} END {print e, t, h}' <<<"$2")
  [[ -n "${token}" && -n "${hash}" ]] || np::die "kubeadm printed no join command" "see ${LOCAL_UP_DIR}/logs/kubeadm-init.log"
  cat <<YAML
apiVersion: kubeadm.k8s.io/v1beta4
kind: JoinConfiguration
discovery:
  bootstrapToken: {apiServerEndpoint: "${endpoint}", token: "${token}", caCertHashes: ["${hash}"]}
$(np::kubeadm::node_registration "$1")
YAML
}
