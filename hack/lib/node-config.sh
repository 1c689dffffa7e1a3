#!/usr/bin/env bash
# The kubelet and kube-proxy configurations of a node of the local cluster:
# one generator for the node on the host (NODES=1, hack/lib/cluster.sh)
# and for each of several nodes (hack/lib/nodes.sh). The configurations
# differ only in the fields of NP_NODECONF_PER_NODE; hack/node-config_test.sh
# checks that. Source it; do not run it.

# NP_NODECONF_PER_NODE are the top-level fields whose values are the
# node's own. cgroupRoot is written for the nodes of a multi-node cluster
# only (each has its own below the host's root; the node on the host uses
# the kubelet's default).
# shellcheck disable=SC2034 # read by hack/node-config_test.sh
NP_NODECONF_PER_NODE=(cgroupRoot containerRuntimeEndpoint tlsCertFile tlsPrivateKeyFile volumePluginDir podLogsDir
  clientConnection hostnameOverride)

# np::nodeconf::kubelet FILE SOCKET SERVING_CERT POD_LOGS_DIR FLEX_DIR [CGROUP_ROOT]:
# writes the kubelet configuration of a node whose containerd listens on
# SOCKET, whose serving certificate and key are SERVING_CERT.crt and
# SERVING_CERT.key, with pod logs in POD_LOGS_DIR and flex drivers in
# FLEX_DIR (all as the kubelet sees them). Disk-pressure eviction and image
# GC are off: the local cluster's nodes share the machine's disk with the
# developer's files, as kind's do, and a test pod evicted for a disk
# that is nearly full fails far from the cause.
np::nodeconf::kubelet() {
  (($# == 5 || $# == 6)) ||
    np::die "np::nodeconf::kubelet: got $# arguments, want 5 or 6" \
      "call it as np::nodeconf::kubelet FILE SOCKET SERVING_CERT POD_LOGS_DIR FLEX_DIR [CGROUP_ROOT]"
  local file=$1 socket=$2 cert=$3 pod_logs=$4 flex_dir=$5 cgroup_root=${6:-}
  {
    cat <<YAML
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
# This machine runs cgroup v1; upstream refuses it unless told otherwise.
failCgroupV1: false
cgroupDriver: cgroupfs
YAML
    [[ -z "${cgroup_root}" ]] || echo "cgroupRoot: ${cgroup_root}"
    cat <<YAML
containerRuntimeEndpoint: unix://${socket}
# Only clients with a certificate from the local CA reach the kubelet API.
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: false}
  x509: {clientCAFile: ${LOCAL_UP_DIR}/pki/ca.crt}
authorization: {mode: AlwaysAllow}
tlsCertFile: ${cert}.crt
tlsPrivateKeyFile: ${cert}.key
clusterDomain: cluster.local
clusterDNS: [10.0.0.10]
volumePluginDir: ${flex_dir}
podLogsDir: ${pod_logs}
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard: {"memory.available": "100Mi", "nodefs.available": "0%", "nodefs.inodesFree": "0%", "imagefs.available": "0%"}
failSwapOn: false
registerNode: true
YAML
  } >"${file}"
}

# np::nodeconf::kube_proxy FILE KUBECONFIG HOSTNAME: writes the kube-proxy
# configuration of node HOSTNAME (iptables mode, pods in POD_CIDR).
np::nodeconf::kube_proxy() {
  (($# == 3)) ||
    np::die "np::nodeconf::kube_proxy: got $# arguments, want 3" \
      "call it as np::nodeconf::kube_proxy FILE KUBECONFIG HOSTNAME"
  cat >"$1" <<YAML
apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection: {kubeconfig: $2}
hostnameOverride: $3
mode: iptables
clusterCIDR: ${POD_CIDR}
nodePortAddresses: [primary]
healthzBindAddress: 127.0.0.1:10256
metricsBindAddress: 127.0.0.1:10249
# Zero: leave the host's conntrack table size and timeouts as they are.
conntrack: {maxPerCore: 0, min: 0, tcpEstablishedTimeout: 0s, tcpCloseWaitTimeout: 0s}
YAML
}
