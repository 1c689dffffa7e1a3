#!/usr/bin/env bash
# The local cluster's DNS, as kubeadm and kind clusters have it: CoreDNS
# (deploy/coredns, the Service kube-dns at the kubelets' clusterDNS
# 10.0.0.10) is applied as soon as the apiserver answers, its pods start
# once the nodes are Ready, and local-up waits for its rollout before it
# says the cluster is up. LOCAL_UP_DNS=false leaves it out (pods then have
# a nameserver that nothing serves). Source after init.sh.

LOCAL_UP_DNS=${LOCAL_UP_DNS:-true}

# np::dns::enabled: whether local-up deploys CoreDNS; any value but true
# or false is an error.
np::dns::enabled() {
  case "${LOCAL_UP_DNS}" in
  true) return 0 ;;
  false) return 1 ;;
  esac
  np::die "LOCAL_UP_DNS=${LOCAL_UP_DNS} is neither true nor false" \
    "unset it (the default, true, deploys deploy/coredns) or set LOCAL_UP_DNS=false"
}

# np::dns::bridge_netfilter warns when bridged traffic bypasses iptables
# (no br_netfilter, or bridge-nf-call-iptables 0): a pod's query reaches a
# CoreDNS pod on its own node through kube-proxy's DNAT, but the answer,
# bridged straight back, would not be translated back from the CoreDNS
# pod's address, and the pod would drop it.
np::dns::bridge_netfilter() {
  local f=/proc/sys/net/bridge/bridge-nf-call-iptables
  [[ -e "${f}" ]] || modprobe br_netfilter 2>/dev/null || true
  [[ "$(cat "${f}" 2>/dev/null)" == 1 ]] ||
    np::warn "${f} is not 1 (no br_netfilter?): a pod on the same node as a CoreDNS pod may get no DNS answers; modprobe br_netfilter and sysctl -w net.bridge.bridge-nf-call-iptables=1"
}

# np::dns::apply: applies deploy/coredns; its pods start once the nodes are
# Ready (np::dns::await waits for them).
np::dns::apply() {
  np::dns::enabled || return 0
  np::dns::bridge_netfilter
  "${BIN_DIR}/kubectl" apply -k "${NODEPLUG_ROOT}/deploy/coredns" >/dev/null ||
    np::die "applying deploy/coredns failed" "see the kubectl error above; LOCAL_UP_DNS=false brings the cluster up without cluster DNS"
  np::log "applied deploy/coredns (CoreDNS, Service kube-system/kube-dns at 10.0.0.10)"
}

# np::dns::await: waits until the CoreDNS Deployment has rolled out (every
# replica ready: the kubernetes plugin has synced with the apiserver).
np::dns::await() {
  np::dns::enabled || return 0
  local started=${SECONDS}
  # shellcheck disable=SC2153 # LOCAL_UP_DIR is init.sh's.
  "${BIN_DIR}/kubectl" -n kube-system rollout status deployment/coredns --timeout=120s >/dev/null ||
    np::die "CoreDNS did not become ready within 120 s" \
      "kubectl -n kube-system get pods -l k8s-app=kube-dns -o wide; kubectl -n kube-system describe pods -l k8s-app=kube-dns; kubectl -n kube-system logs deployment/coredns; the kubelets' logs in ${LOCAL_UP_DIR}/logs; LOCAL_UP_DNS=false brings the cluster up without cluster DNS"
  np::log "cluster DNS ready: CoreDNS at 10.0.0.10 ($((SECONDS - started)) s after the nodes)"
}
