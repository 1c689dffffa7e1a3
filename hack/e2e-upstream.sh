#!/usr/bin/env bash
# Runs upstream Kubernetes' own e2e storage specs against nodeplug: builds
# nodeplug's binaries, the test binary of upstream's storage specs
# (test/e2e_upstream) and the images they use, brings up NODES=3 with every
# --experimental-* feature of nodeplug on, deploys the mount utilities, runs
# the focused specs, prints the counts, and tears the cluster down, also
# when a spec fails or the run is interrupted. docs/e2e-upstream.md says
# which specs run and why the others are left out.
#
# Environment: E2E_UPSTREAM_SET (ci or full), E2E_UPSTREAM_FOCUS,
# E2E_UPSTREAM_SKIP, E2E_UPSTREAM_SERIAL_FOCUS, E2E_UPSTREAM_SERIAL_SKIP
# (ginkgo regexps), E2E_UPSTREAM_PROCS (specs run at once: 3, for the full
# set 4), E2E_UPSTREAM_TIMEOUT (of each pass: 40m, for the full set 90m),
# NODES (3), SKIP_BUILD=1 (reuse ${BIN_DIR}). Extra arguments go to ginkgo
# (e.g. -v, --dry-run with E2E_UPSTREAM_PROCS=1).
#
# E2E_CLUSTER=existing runs the specs against the cluster KUBECONFIG names
# instead (docs/e2e-upstream.md, "Running the suites against your own
# cluster"): no local-up or local-down, no images built or imported. Its
# nodes and its control plane must take SSH with KUBE_SSH_KEY_PATH as
# KUBE_SSH_USER (upstream's framework reaches them so, with
# E2E_UPSTREAM_PROVIDER, local by default, or skeleton), and its nodes must
# pull the images the specs use: upstream's registries, or a mirror named
# by KUBE_TEST_REPO_LIST (upstream's own mechanism, passed through to the
# specs). The mount utilities DaemonSet is applied if the cluster has none.
set -o errexit -o nounset -o pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/init.sh"
source "${NODEPLUG_ROOT}/hack/lib/e2e-existing.sh"
E2E_CLUSTER=$(np::e2e::cluster_mode) || exit 1
if [[ "${E2E_CLUSTER}" == existing ]]; then
  np::e2e_existing::check_env
  if [[ -n "${KUBE_TEST_REPO_LIST:-}" ]]; then
    [[ -r "${KUBE_TEST_REPO_LIST}" ]] || np::die "KUBE_TEST_REPO_LIST=${KUBE_TEST_REPO_LIST} cannot be read" \
      "name a YAML file of upstream's registry keys (e.g. promoterE2eRegistry: mirror.example/e2e), or unset it"
    export KUBE_TEST_REPO_LIST
  fi
  # The cluster answers before the build, when a kubectl is at hand.
  kubectl=$(np::e2e_existing::kubectl)
  [[ -z "${kubectl}" ]] || np::e2e_existing::check_cluster "${kubectl}"
fi
export NODES=${NODES:-3}
# Every experimental feature, as hack/e2e.sh sets them. The plugin
# watcher's directory is each node's own; the default StorageClass's driver
# registers there (hack/lib/default-storageclass.sh).
export KUBELET_EXTRA_FLAGS=${KUBELET_EXTRA_FLAGS-"--experimental-flexvolume-discovery --experimental-mount-namespace=kube-mount --experimental-plugin-registration-dir=/var/lib/kubelet/plugins_registry_nodeplug --experimental-local-volume-identity-check"}
export KUBELET_HIDDEN_UTILITIES=${KUBELET_HIDDEN_UTILITIES-"mkfs* mke2fs fsck* e2fsck blkid"}
export KCM_EXTRA_FLAGS=${KCM_EXTRA_FLAGS-"--experimental-flexvolume-discovery --experimental-mount-namespace=kube-mount --experimental-mount-pod-driver-dir=${LOCAL_UP_DIR}/kcm-mount-pod-drivers"}
source "${NODEPLUG_ROOT}/hack/lib/cluster.sh"
source "${NODEPLUG_ROOT}/hack/lib/images.sh"
source "${NODEPLUG_ROOT}/hack/lib/preflight.sh"
source "${NODEPLUG_ROOT}/hack/lib/nodes.sh"
source "${NODEPLUG_ROOT}/hack/lib/e2e-upstream.sh"

# Two sets (E2E_UPSTREAM_SET): "ci", a few specs of every group, within
# CI's time; "full", every group docs/e2e-upstream.md lists. Each set has
# a parallel pass (E2E_UPSTREAM_PROCS at once) and a serial pass of the
# specs that stop kubelets ([Disruptive]) or need the whole cluster
# ([Serial]), one at a time. A FOCUS or SKIP set in the environment
# replaces the set's; an empty E2E_UPSTREAM_SERIAL_FOCUS skips the serial pass.
E2E_UPSTREAM_SET=${E2E_UPSTREAM_SET:-ci}
LOCAL='PersistentVolumes-local|In-tree Volumes \[Driver: local\]'
FLEX='\[sig-storage\] Flexvolumes|Detaching volumes|Mounted flexvolume'
COMMON='\[sig-storage\] (ConfigMap|Secrets|Projected|Downward API volume|EmptyDir|HostPath|Volumes)\b'
DYNAMIC='PVC Protection|HostPathType|PersistentVolumes Default StorageClass'
case "${E2E_UPSTREAM_SET}" in
  ci)
    focus="PersistentVolumes-local|In-tree Volumes \[Driver: local\] \[LocalVolumeType: blockfs\]|Flexvolumes \[Provider:gce,local\] should be mountable|${COMMON}.*\[Conformance\]"
    skip='\[Slow\]|\[Serial\]|\[Disruptive\]|\[Flaky\]|\[Feature:SELinux|\[Feature:Volume'
    serial='\[Driver: local\] \[LocalVolumeType: (dir|tmpfs|block|blockfs)\] \[Testpattern: Pre-provisioned PV \(filesystem volmode\)\] disruptive.*Should test that pv written before kubelet restart is readable after restart|\[Driver: local\] \[LocalVolumeType: blockfs\] .*should remount stale subpath'
    ;;
  full)
    focus="${LOCAL}|${FLEX}|${COMMON}|${DYNAMIC}"
    skip='\[Serial\]|\[Disruptive\]|\[Flaky\]|\[Feature:OffByDefault\]|\[Feature:SELinux|\[Feature:VolumeSourceXFS|\[Feature:VolumeSnapshotDataSource'
    serial="(${LOCAL}|${FLEX}|${COMMON}|${DYNAMIC}).*\\[Disruptive\\]"
    procs=4 timeout=90m
    ;;
  *) np::die "E2E_UPSTREAM_SET=${E2E_UPSTREAM_SET} is not a set" "use ci (the default) or full" ;;
esac
E2E_UPSTREAM_FOCUS=${E2E_UPSTREAM_FOCUS:-${focus}}
E2E_UPSTREAM_SKIP=${E2E_UPSTREAM_SKIP:-${skip}}
E2E_UPSTREAM_SERIAL_FOCUS=${E2E_UPSTREAM_SERIAL_FOCUS-${serial}}
E2E_UPSTREAM_SERIAL_SKIP=${E2E_UPSTREAM_SERIAL_SKIP:-'\[Flaky\]|\[Feature:OffByDefault\]|\[Feature:SELinux|gce-localssd'}
E2E_UPSTREAM_PROCS=${E2E_UPSTREAM_PROCS:-${procs:-3}}
E2E_UPSTREAM_TIMEOUT=${E2E_UPSTREAM_TIMEOUT:-${timeout:-40m}}
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

if [[ "${E2E_CLUSTER}" == local ]]; then
  ((NODES > 1)) || np::die "NODES=${NODES}: upstream's host-exec pods need nodes with their own PID 1" "use NODES=3 (the default) or 2"
fi
# The cluster's directory must be root's (local-up checks it too): refused
# before the build.
[[ "${E2E_CLUSTER}" != local ]] || np::preflight::local_up_dir "${LOCAL_UP_DIR}"
started=${SECONDS}
if [[ "${SKIP_BUILD:-0}" != 1 ]]; then
  "${NODEPLUG_ROOT}/hack/build.sh"
  np::e2e_upstream::build
fi
[[ -x "${E2E_UPSTREAM_TEST}" && -x "${BIN_DIR}/ginkgo" ]] || np::die "${E2E_UPSTREAM_TEST} is missing" "run hack/e2e-upstream.sh without SKIP_BUILD=1"
built=$((SECONDS - started))
rm -rf "${RESULTS}"
mkdir -p "${RESULTS}"
provider=local
host_args=()
if [[ "${E2E_CLUSTER}" == existing ]]; then
  provider=${E2E_UPSTREAM_PROVIDER:-local}
  # The control plane's address, which the flex specs reach over SSH to
  # install a driver for the controller-manager: the kubeconfig's server
  # (without -host the framework dials port 22 of this machine, which is
  # where the local cluster's control plane listens).
  host_args=(-host "$("${BIN_DIR}/kubectl" config view --minify -o jsonpath='{.clusters[0].cluster.server}')")
  # The cluster pulls the images; the specs' own references, with
  # KUBE_TEST_REPO_LIST applied, are logged for the operator.
  [[ -n "${kubectl}" ]] || np::e2e_existing::check_cluster "${BIN_DIR}/kubectl"
  np::log "the cluster's nodes must pull upstream's test images, among them: $("${BIN_DIR}/e2eimages" | awk '{print $2}' | tr '\n' ' ')"
  np::e2e_upstream::existing_mount_utilities
else
  # The images take programs from the host's packages: install them first.
  np::preflight::root
  np::preflight::apt
  np::e2e_upstream::build_images "${RESULTS}/images"
  # What upstream's specs need of them (about 5 s): a failure here is an
  # image's, not nodeplug's.
  "${NODEPLUG_ROOT}/hack/test-e2e-upstream-images.sh" >"${RESULTS}/images-test.log" 2>&1 ||
    np::die "the images for upstream's specs lack what the specs use (see ${RESULTS}/images-test.log)" \
      "see build/e2e-images/README.md"

  trap teardown EXIT
  SKIP_BUILD=1 "${NODEPLUG_ROOT}/hack/local-up-cluster.sh"
  export KUBECONFIG=${LOCAL_UP_DIR}/pki/admin.kubeconfig
  np::e2e_upstream::import "${RESULTS}/images"
  np::e2e_upstream::mount_utilities

  # Upstream's framework reaches the nodes and the control plane over SSH
  # (provider local) with this key and user.
  export KUBE_SSH_KEY_PATH=${LOCAL_UP_DIR}/ssh/id_ed25519 KUBE_SSH_USER=root
  np::cluster::alive sshd || np::die "no SSH server for the control plane" \
    "upstream's flex specs install drivers there over SSH: free port 22 on 127.0.0.1 (see local-up's warning)"
fi
export KUBECONFIG KUBE_SSH_KEY_PATH KUBE_SSH_USER

# run_pass NAME PROCS FOCUS SKIP [GINKGO FLAGS...]: one ginkgo run, its
# report in ${RESULTS}/NAME.json.
run_pass() {
  local name=$1 procs=$2 focus=$3 skip=$4
  shift 4
  np::log "upstream's specs, ${name} pass, ${procs} at once: focus '${focus}', skip '${skip}'"
  "${BIN_DIR}/ginkgo" --procs "${procs}" --focus "${focus}" --skip "${skip}" \
    --timeout "${E2E_UPSTREAM_TIMEOUT}" --no-color \
    --json-report "${name}.json" --output-dir "${RESULTS}" "$@" "${E2E_UPSTREAM_TEST}" -- \
    -kubeconfig "${KUBECONFIG}" -provider "${provider}" -report-dir "${RESULTS}" "${host_args[@]}" 2>&1 | tee -a "${RESULTS}/e2e.log"
}

run_started=${SECONDS}
rc=0
run_pass parallel "${E2E_UPSTREAM_PROCS}" "${E2E_UPSTREAM_FOCUS}" "${E2E_UPSTREAM_SKIP}" "$@" || rc=$?
if [[ -n "${E2E_UPSTREAM_SERIAL_FOCUS}" ]]; then
  run_pass serial 1 "${E2E_UPSTREAM_SERIAL_FOCUS}" "${E2E_UPSTREAM_SERIAL_SKIP}" "$@" || rc=$?
fi
ran=$((SECONDS - run_started))
echo
np::e2e_upstream::summary "${RESULTS}"/parallel.json "${RESULTS}"/serial.json || np::warn "no ginkgo report in ${RESULTS}"
np::log "set ${E2E_UPSTREAM_SET}: build ${built} s, specs ${ran} s, all $((SECONDS - started)) s; log ${RESULTS}/e2e.log"
exit "${rc}"
