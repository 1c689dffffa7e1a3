#!/usr/bin/env bash
# make test-e2e-kubeadm: a kubeadm cluster of three nodes with nodeplug
# installed by docs/install.md (hack/kubeadm-up.sh), the e2e tier's focused
# set run against it as against any existing cluster (E2E_CLUSTER=existing,
# over SSH; at least one test of each design), then local-down, also when
# a test fails (the cluster logs are kept in _output/e2e-logs).
# E2E_KUBEADM_RUN replaces the set (a go test -run pattern); extra
# arguments go to go test. SKIP_BUILD=1 reuses ${BIN_DIR}.
set -o errexit -o nounset -o pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/init.sh"

# Tests that run over SSH (E2E_CLUSTER=existing), of each design that has
# one: flex discovery (the installer DaemonSet on every node), the plugin
# watcher (DRA drivers registering), mount utilities in pods (the admission
# policy on who may create mount pods; Bidirectional propagation from a
# pod), the local PV provisioner (the shipped manifests on the nodes), the
# kubelet's local volume identity check (two pairs of disks swapped across
# a kubelet restart: every mount refused until the disks are back), and
# the cluster's own Service and DNS paths (docs/install.md, "Tested").
E2E_KUBEADM_RUN=${E2E_KUBEADM_RUN:-'^(TestMultiNodeFlexInstaller|TestDRADrivers|TestMountPodAdmission|TestBidirectionalMountPropagation|TestLocalPVShippedManifestsOnNodes|TestMultiNodeLocalPVDisksSwappedAcrossRestart|TestPodReachesKubernetesService|TestClusterDNS)$'}

teardown() {
  local rc=$?
  if ((rc != 0)) && [[ -d "${LOCAL_UP_DIR}/logs" ]]; then
    mkdir -p "${OUT_DIR}/e2e-logs"
    cp -r "${LOCAL_UP_DIR}/logs/." "${OUT_DIR}/e2e-logs/" 2>/dev/null || true
    np::warn "e2e on the kubeadm cluster failed; cluster logs copied to ${OUT_DIR}/e2e-logs"
  fi
  "${NODEPLUG_ROOT}/hack/local-down.sh" || np::warn "local-down failed; run 'make kubeadm-down'"
  exit "${rc}"
}
trap teardown EXIT

NODES=3 "${NODEPLUG_ROOT}/hack/kubeadm-up.sh"
E2E_CLUSTER=existing KUBECONFIG=${LOCAL_UP_DIR}/pki/admin.kubeconfig KUBE_SSH_KEY_PATH=${LOCAL_UP_DIR}/ssh/id_ed25519 \
  KUBE_SSH_USER=root SKIP_BUILD=1 "${NODEPLUG_ROOT}/hack/e2e.sh" -run "${E2E_KUBEADM_RUN}" "$@"
