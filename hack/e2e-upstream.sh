#!/usr/bin/env bash
# Runs upstream Kubernetes' own e2e storage specs against nodeplug: builds
# nodeplug's binaries, the test binary of upstream's storage specs
# (test/e2e_upstream) and the images they use, brings up NODES=3 with every
# --experimental-* feature of nodeplug on, deploys the mount utilities, runs
# the focused specs, prints the counts, and tears the cluster down, also
# when a spec fails or the run is interrupted. docs/e2e-upstream.md says
# which specs run and why the others are left out.
#
# Environment: E2E_UPSTREAM_FOCUS, E2E_UPSTREAM_SKIP (ginkgo regexps),
# E2E_UPSTREAM_PROCS (specs run at once, 3), E2E_UPSTREAM_TIMEOUT (of the
# specs, 20m), NODES (3), SKIP_BUILD=1 (reuse ${BIN_DIR}). Extra arguments
# go to ginkgo (e.g. -v, --dry-run with E2E_UPSTREAM_PROCS=1).
set -o errexit -o nounset -o pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/init.sh"
export NODES=${NODES:-3}
# Every experimental feature, as hack/e2e.sh sets them. The plugin
# watcher's directory is each node's own; the default StorageClass's driver
# registers there (hack/lib/default-storageclass.sh).
export KUBELET_EXTRA_FLAGS=${KUBELET_EXTRA_FLAGS-"--experimental-flexvolume-discovery --experimental-mount-namespace=kube-mount --experimental-plugin-registration-dir=/var/lib/kubelet/plugins_registry_nodeplug"}
export KUBELET_HIDDEN_UTILITIES=${KUBELET_HIDDEN_UTILITIES-"mkfs* mke2fs fsck* e2fsck blkid"}
export KCM_EXTRA_FLAGS=${KCM_EXTRA_FLAGS-"--experimental-flexvolume-discovery --experimental-mount-namespace=kube-mount --experimental-mount-pod-driver-dir=${LOCAL_UP_DIR}/kcm-mount-pod-drivers"}
source "${NODEPLUG_ROOT}/hack/lib/cluster.sh"
source "${NODEPLUG_ROOT}/hack/lib/images.sh"
source "${NODEPLUG_ROOT}/hack/lib/nodes.sh"
source "${NODEPLUG_ROOT}/hack/lib/e2e-upstream.sh"

# The local volume specs, without those that take minutes each ([Slow]),
# stop kubelets or need the whole cluster ([Disruptive], [Serial]), or need
# an opt-in feature ([Feature:...]).
E2E_UPSTREAM_FOCUS=${E2E_UPSTREAM_FOCUS:-'PersistentVolumes-local|In-tree Volumes \[Driver: local\]'}
E2E_UPSTREAM_SKIP=${E2E_UPSTREAM_SKIP:-'\[Slow\]|\[Serial\]|\[Disruptive\]|\[Flaky\]|\[Feature:'}
E2E_UPSTREAM_PROCS=${E2E_UPSTREAM_PROCS:-3}
E2E_UPSTREAM_TIMEOUT=${E2E_UPSTREAM_TIMEOUT:-20m}
RESULTS=${OUT_DIR}/e2e-upstream

teardown() {
  local rc=$?
  if ((rc != 0)) && [[ -d "${LOCAL_UP_DIR}/logs" ]]; then
    mkdir -p "${RESULTS}/cluster-logs"
    cp -r "${LOCAL_UP_DIR}/logs/." "${RESULTS}/cluster-logs/" 2>/dev/null || true
    np::warn "e2e-upstream failed; cluster logs copied to ${RESULTS}/cluster-logs"
  fi
  "${NODEPLUG_ROOT}/hack/local-down.sh" || np::warn "local-down failed; run 'make local-down'"
  exit "${rc}"
}

((NODES > 1)) || np::die "NODES=${NODES}: upstream's host-exec pods need nodes with their own PID 1" "use NODES=3 (the default) or 2"
started=${SECONDS}
if [[ "${SKIP_BUILD:-0}" != 1 ]]; then
  "${NODEPLUG_ROOT}/hack/build.sh"
  np::e2e_upstream::build
fi
[[ -x "${E2E_UPSTREAM_TEST}" && -x "${BIN_DIR}/ginkgo" ]] || np::die "${E2E_UPSTREAM_TEST} is missing" "run hack/e2e-upstream.sh without SKIP_BUILD=1"
built=$((SECONDS - started))
rm -rf "${RESULTS}"
mkdir -p "${RESULTS}"
np::e2e_upstream::build_images "${RESULTS}/images"

trap teardown EXIT
SKIP_BUILD=1 "${NODEPLUG_ROOT}/hack/local-up-cluster.sh"
export KUBECONFIG=${LOCAL_UP_DIR}/pki/admin.kubeconfig
np::e2e_upstream::import "${RESULTS}/images"
np::e2e_upstream::mount_utilities

np::log "running upstream's specs, ${E2E_UPSTREAM_PROCS} at once: focus '${E2E_UPSTREAM_FOCUS}', skip '${E2E_UPSTREAM_SKIP}'"
run_started=${SECONDS}
rc=0
"${BIN_DIR}/ginkgo" --procs "${E2E_UPSTREAM_PROCS}" --focus "${E2E_UPSTREAM_FOCUS}" --skip "${E2E_UPSTREAM_SKIP}" \
  --timeout "${E2E_UPSTREAM_TIMEOUT}" --no-color \
  --json-report e2e.json --output-dir "${RESULTS}" "$@" "${E2E_UPSTREAM_TEST}" -- \
  -kubeconfig "${KUBECONFIG}" -provider local -report-dir "${RESULTS}" 2>&1 | tee "${RESULTS}/e2e.log" || rc=$?
ran=$((SECONDS - run_started))
echo
np::e2e_upstream::summary "${RESULTS}/e2e.json" || np::warn "no ginkgo report in ${RESULTS}/e2e.json"
np::log "build ${built} s, specs ${ran} s, all $((SECONDS - started)) s; log ${RESULTS}/e2e.log"
exit "${rc}"
