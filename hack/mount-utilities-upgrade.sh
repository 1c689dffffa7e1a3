#!/usr/bin/env bash
# Upgrades the mount-utilities DaemonSet (deploy/mount-utilities) node by
# node. The DaemonSet has `updateStrategy: OnDelete` because deleting a mount
# pod kills the FUSE daemons it runs, and every volume they serve on that
# node then fails. For each NODE the script:
#
#   1. check    the DaemonSet exists and uses OnDelete, its pods tolerate the
#               upgrade taint; finds the node's mount pod and the DaemonSet's
#               current revision (its newest ControllerRevision). A pod of
#               the current revision that is Ready: nothing to do.
#   2.          reads the plugins the pod serves from its labels:
#               mount.kubernetes.io/<name>=true          kubernetes.io/<name>
#               flexvolume.mount.kubernetes.io/<esc>=true flex driver (<esc>
#               unescaped: "_2f" is "/", nodeplug.io_2ffuse is nodeplug.io/fuse)
#   3. taint    nodeplug.io/mount-utilities-upgrade=<pod>:NoExecute. Only pods
#               that tolerate it stay; the mount pods tolerate everything.
#   4. drain    waits until no pod on the node uses a volume of those plugins
#               (inline flexVolume, or a PVC bound to a local or flex PV),
#               the node reports none in use or attached, and no FUSE mount
#               that a process of the old pod serves is left (its mount table
#               and /dev/fuse descriptors, read by kubectl exec; FUSE mounts
#               that propagated in from the host do not count). If that
#               table cannot be read, it stops (exit 1).
#   5. delete   deletes the old pod; ready: waits until the DaemonSet's new
#               pod on the node is Ready.
#   6. untaint  removes the taint.
#
# It never deletes a mount pod while a volume it serves is in use: a pod that
# tolerates the taint (so it is not evicted) and uses such a volume makes it
# refuse, before tainting if it can see the pod then, and remove its taint.
#
# Idempotent and resumable: a node whose pod is current and Ready is skipped;
# a run interrupted after the taint is finished by the next run (the taint's
# value names the old pod; if that pod is gone, the script waits for the new
# one to be Ready and untaints).
#
# Exit codes: 0 done (or nothing to do), 1 a kubectl call failed or the old
# pod's mount table could not be read, 2 usage or a precondition, 3 refused
# (a volume is in use by a pod that tolerates the taint), 4 timeout, 130
# interrupted.
#
# Needs kubectl ($KUBECTL, else kubectl in PATH; KUBECONFIG from the
# environment) and jq, and sh and cat in the mount pod's image.
# MU_POLL_INTERVAL (seconds, default 2) sets how often it polls.
#
# The functions live in hack/lib/mount-utilities-upgrade/ (args.sh, output.sh,
# kubectl.sh, check.sh, act.sh), which this script sources from next to
# itself: run it from a nodeplug checkout, from any directory.
set -o errexit -o nounset -o pipefail

readonly MU_TAINT_KEY=nodeplug.io/mount-utilities-upgrade
readonly MU_TAINT_EFFECT=NoExecute
readonly MU_EXIT_FAILED=1 MU_EXIT_USAGE=2 MU_EXIT_REFUSED=3 MU_EXIT_TIMEOUT=4

KUBECTL=${KUBECTL:-kubectl}
MU_POLL_INTERVAL=${MU_POLL_INTERVAL:-2}

MU_NAMESPACE=kube-mount
MU_DAEMONSET=mount-utilities
MU_TIMEOUT=300
MU_DRY_RUN=0
MU_NODES=()
MU_TMP=""
MU_SUMMARY=()

mu::usage() {
  cat <<EOF
Usage: ${0##*/} [--namespace NS] [--daemonset NAME] [--timeout SECONDS] [--dry-run] NODE...

Upgrades the mount-utilities DaemonSet (updateStrategy OnDelete) on each
NODE in turn: taint the node ${MU_TAINT_KEY}=<pod>:${MU_TAINT_EFFECT}
so that the pods using the volumes of the plugins its mount pod serves are
evicted, wait until none is in use, delete the old mount pod, wait until the
DaemonSet's new pod is Ready, untaint. Refuses (exit 3) while a pod that
tolerates the taint still uses such a volume. Run it again after an
interruption: it resumes.

  --namespace NS       namespace of the DaemonSet (default kube-mount)
  --daemonset NAME     name of the DaemonSet (default mount-utilities)
  --timeout SECONDS    limit of each wait: drain, delete, new pod Ready (default 300)
  --dry-run            print what it would do; change nothing
  -h, --help           print this help

Exit codes: 0 done, 1 a kubectl call failed or the old pod's mount table
could not be read (it needs pods/exec, and sh and cat in the pod), 2 usage
or precondition, 3 refused (volume in use by a pod that tolerates the
taint), 4 timeout.
kubectl is \$KUBECTL or kubectl in PATH; KUBECONFIG is taken from the environment.
EOF
}

# mu::lib_dir prints hack/lib/mount-utilities-upgrade next to this script,
# following symbolic links to it (a link in PATH, say).
mu::lib_dir() {
  local self=${BASH_SOURCE[0]} target
  while [[ -L ${self} ]]; do
    target=$(readlink "${self}")
    [[ ${target} == /* ]] || target=$(dirname "${self}")/${target}
    self=${target}
  done
  printf '%s\n' "$(dirname "${self}")/lib/mount-utilities-upgrade"
}

MU_LIB_DIR=$(mu::lib_dir)
for mu_lib in args output kubectl check act; do
  [[ -r ${MU_LIB_DIR}/${mu_lib}.sh ]] || {
    printf 'error: %s is missing: run %s from a nodeplug checkout (it needs hack/lib/mount-utilities-upgrade/ next to it)\n' \
      "${MU_LIB_DIR}/${mu_lib}.sh" "${BASH_SOURCE[0]##*/}" >&2
    exit "${MU_EXIT_USAGE}"
  }
done
unset mu_lib
# shellcheck source=hack/lib/mount-utilities-upgrade/args.sh
source "${MU_LIB_DIR}/args.sh"
# shellcheck source=hack/lib/mount-utilities-upgrade/output.sh
source "${MU_LIB_DIR}/output.sh"
# shellcheck source=hack/lib/mount-utilities-upgrade/kubectl.sh
source "${MU_LIB_DIR}/kubectl.sh"
# shellcheck source=hack/lib/mount-utilities-upgrade/check.sh
source "${MU_LIB_DIR}/check.sh"
# shellcheck source=hack/lib/mount-utilities-upgrade/act.sh
source "${MU_LIB_DIR}/act.sh"

# mu::upgrade_node NODE runs the procedure on one node.
mu::upgrade_node() {
  MU_NODE=$1
  MU_NODE_STEPS=()
  MU_NODE_T0=$(mu::now_us)
  mu::step_start check
  mu::load_daemonset
  mu::load_node
  mu::load_mount_pods || mu::fail "${MU_EXIT_FAILED}" "kubectl get pods: $(<"${MU_TMP}/mount-pods.json.err")"
  mu::step_done
  if [[ -z ${MU_OLD_POD} ]]; then
    mu::finish_without_old_pod
    return
  fi
  local old=${MU_OLD_POD}
  ((MU_TAINTED == 0)) || mu::say "resuming: the node is tainted ${MU_TAINT_KEY}=${MU_TAINT_VALUE}:${MU_TAINT_EFFECT}"
  mu::say "pod ${old} runs revision ${MU_OLD_REV}; the DaemonSet's is ${MU_REV}"
  mu::check_tolerations
  mu::load_plugins
  # Before tainting: a pod that would stay makes it refuse with nothing changed.
  mu::scan_in_use || mu::fail "${MU_EXIT_FAILED}" "$(cat "${MU_TMP}"/*.err 2>/dev/null | tail -n 1)"
  mu::has_tolerating_user && mu::refuse
  mu::taint
  mu::drain
  mu::delete_old
  mu::wait_ready
  mu::untaint
  if ((MU_DRY_RUN)); then
    mu::record "dry run: would upgrade ${old} (revision ${MU_OLD_REV} -> ${MU_REV})"
  else
    mu::record "upgraded ${old} -> ${MU_NEW_POD} (${MU_NEW_IMAGES})"
  fi
}

mu::main() {
  mu::parse_args "$@"
  command -v jq >/dev/null || mu::usage_error "jq is needed (apt-get install jq)"
  command -v "${KUBECTL}" >/dev/null || mu::usage_error "kubectl not found: set \$KUBECTL or put kubectl in PATH"
  MU_TMP=$(mktemp -d)
  trap 'rm -rf "${MU_TMP}"' EXIT
  trap mu::interrupted INT TERM
  local node
  for node in "${MU_NODES[@]}"; do
    mu::upgrade_node "${node}"
  done
  mu::finish 0
}

if [[ ${BASH_SOURCE[0]} == "$0" ]]; then
  mu::main "$@"
fi
