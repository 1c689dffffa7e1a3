#!/usr/bin/env bash
# Runs the e2e suite: brings up the local cluster (three nodes; NODES=1 for
# one node on the host), runs the Go tests in
# test/e2e (build tag e2e) against it, and tears the cluster down again,
# also when a test fails or the run is interrupted. Extra arguments go to
# go test (e.g. -run TestFlex). Before the suite, hack/local-up-faults_test.sh
# tests the cluster scripts' fault handling (E2E_FAULTS=0 leaves it out
# outside CI).
#
# E2E_CLUSTER=existing runs the suite against the cluster KUBECONFIG names
# instead, its nodes reached over SSH with KUBE_SSH_KEY_PATH as
# KUBE_SSH_USER (docs/e2e.md): no local-up or local-down, no fault tests,
# no check of the mount-utilities image in a chroot; the tests that need
# the local cluster's host skip and are counted. E2E_IMAGE_REPO names the
# registry repository of the tests' images (docker.io/nodeplug).
set -o errexit -o nounset -o pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/init.sh"
source "${NODEPLUG_ROOT}/hack/lib/e2e-existing.sh"
E2E_CLUSTER=$(np::e2e::cluster_mode) || exit 1
if [[ "${E2E_CLUSTER}" == existing ]]; then
  np::e2e_existing::check_env
  # The cluster answers before the build, when a kubectl is at hand.
  kubectl=$(np::e2e_existing::kubectl)
  [[ -z "${kubectl}" ]] || np::e2e_existing::check_cluster "${kubectl}"
  [[ "${SKIP_BUILD:-0}" == 1 ]] || "${NODEPLUG_ROOT}/hack/build.sh"
  [[ -n "${kubectl}" ]] || np::e2e_existing::check_cluster "${BIN_DIR}/kubectl"
  source "${NODEPLUG_ROOT}/hack/lib/helm.sh"
  np::helm::build
  # The plugin watcher's directory the cluster's kubelets were given
  # (--experimental-plugin-registration-dir), as the tests see it on a node.
  export E2E_PLUGIN_REGISTRATION_DIR=${E2E_PLUGIN_REGISTRATION_DIR:-/var/lib/kubelet/plugins_registry_nodeplug}
  export E2E_IMAGE_REPO=${E2E_IMAGE_REPO:-docker.io/nodeplug}
  export E2E_CLUSTER KUBECONFIG KUBE_SSH_KEY_PATH KUBE_SSH_USER BIN_DIR NODEPLUG_HELM=${BIN_DIR}/helm
  rc=0
  np::e2e_existing::run "${OUT_DIR}/e2e-existing/go-test.json" "$@" || rc=$?
  exit "${rc}"
fi
# The suite runs on NODES=3 (the control plane on the host, three nodes in
# namespaces of their own); NODES=1 runs it on a node on the host.
export NODES=${NODES:-3}
# The features under test are switched on in both binaries. This comes
# before cluster.sh, which defaults the *_EXTRA_FLAGS to empty. The plugin
# registration dir is the kubelet's own (each node has its own
# /var/lib/kubelet); tests reach it through the node.
if ((NODES > 1)); then
  E2E_PLUGIN_REGISTRATION_DIR=/var/lib/kubelet/plugins_registry_nodeplug
else
  E2E_PLUGIN_REGISTRATION_DIR=${LOCAL_UP_DIR}/kubelet/plugins_registry_nodeplug
fi
export E2E_PLUGIN_REGISTRATION_DIR
export KUBELET_EXTRA_FLAGS=${KUBELET_EXTRA_FLAGS-${E2E_KUBELET_FLAGS:---experimental-flexvolume-discovery --experimental-plugin-registration-dir=${E2E_PLUGIN_REGISTRATION_DIR} --experimental-mount-namespace=kube-mount --experimental-local-volume-identity-check}}
# The kubelet runs without mkfs, fsck and blkid: the mount-utilities e2e
# proves that they run in mount pods.
export KUBELET_HIDDEN_UTILITIES=${KUBELET_HIDDEN_UTILITIES-"mkfs* mke2fs fsck* e2fsck blkid"}
export KCM_EXTRA_FLAGS=${KCM_EXTRA_FLAGS-${E2E_KCM_FLAGS:---experimental-flexvolume-discovery --experimental-mount-namespace=kube-mount --experimental-mount-pod-driver-dir=${LOCAL_UP_DIR}/kcm-mount-pod-drivers}}
source "${NODEPLUG_ROOT}/hack/lib/cluster.sh"
source "${NODEPLUG_ROOT}/hack/lib/preflight.sh"
# The cluster's directory must be root's (local-up checks it too): refused
# here, before the build and before teardown's local-down.
np::preflight::local_up_dir "${LOCAL_UP_DIR}"

teardown() {
  local rc=$?
  if ((rc != 0)) && [[ -d "${LOCAL_UP_DIR}/logs" ]]; then
    mkdir -p "${OUT_DIR}/e2e-logs"
    cp -r "${LOCAL_UP_DIR}/logs/." "${OUT_DIR}/e2e-logs/" 2>/dev/null || true
    np::warn "e2e failed; cluster logs copied to ${OUT_DIR}/e2e-logs"
  fi
  "${NODEPLUG_ROOT}/hack/local-down.sh" || np::warn "local-down failed; run 'make local-down'"
  exit "${rc}"
}
trap teardown EXIT

[[ "${SKIP_BUILD:-0}" == 1 ]] || "${NODEPLUG_ROOT}/hack/build.sh"
# TestDRADrivers installs dra-example-driver's chart with the helm
# that hack/tools/helm pins (built by the integration tier too; 2 s warm).
source "${NODEPLUG_ROOT}/hack/lib/helm.sh"
np::helm::build
export NODEPLUG_HELM=${BIN_DIR}/helm
# local-up and local-down under faults (port taken, failure half way, a
# killed cluster), in a cluster directory of their own. E2E_FAULTS=0 leaves
# them out of a developer's run; CI always runs them.
if [[ "${E2E_FAULTS:-1}" != 0 || "${CI:-}" == true ]]; then
  "${NODEPLUG_ROOT}/hack/local-up-faults_test.sh"
fi
SKIP_BUILD=1 "${NODEPLUG_ROOT}/hack/local-up-cluster.sh"
# The mount-utilities image the cluster runs has the tools and the FUSE
# driver its contract promises (build/mount-utilities/README.md), checked
# in a chroot (about 6 s).
"${NODEPLUG_ROOT}/hack/test-mount-utilities-image.sh" >"${LOCAL_UP_DIR}/logs/mount-utilities-image-test.log" 2>&1 ||
  np::die "the mount-utilities image lacks what its contract promises (see ${LOCAL_UP_DIR}/logs/mount-utilities-image-test.log)" \
    "see build/mount-utilities/README.md"
export KUBECONFIG=${LOCAL_UP_DIR}/pki/admin.kubeconfig LOCAL_UP_DIR BIN_DIR NODE_NAME
cd "${NODEPLUG_ROOT}"
go test -tags e2e -count=1 -timeout 30m "$@" ./test/e2e/...
