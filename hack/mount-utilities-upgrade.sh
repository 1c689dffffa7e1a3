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
#               (inline flexVolume, or a PVC bound to a local or flex PV) and
#               the node reports none in use or attached.
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
# Exit codes: 0 done (or nothing to do), 1 a kubectl call failed, 2 usage or
# a precondition, 3 refused (a volume is in use by a pod that tolerates the
# taint), 4 timeout, 130 interrupted.
#
# Needs kubectl ($KUBECTL, else kubectl in PATH; KUBECONFIG from the
# environment) and jq. MU_POLL_INTERVAL (seconds, default 2) sets how often
# it polls.
# The jq programs below are single-quoted: their $names are jq's.
# shellcheck disable=SC2016
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

Exit codes: 0 done, 1 a kubectl call failed, 2 usage or precondition,
3 refused (volume in use by a pod that tolerates the taint), 4 timeout.
kubectl is \$KUBECTL or kubectl in PATH; KUBECONFIG is taken from the environment.
EOF
}

mu::usage_error() {
  printf 'error: %s\n\n' "$1" >&2
  mu::usage >&2
  exit "${MU_EXIT_USAGE}"
}

# mu::set_flag FLAG VALUE validates and stores one flag's value.
mu::set_flag() {
  local flag=$1 value=$2
  case ${flag} in
    --namespace | --daemonset)
      [[ ${value} =~ ^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$ ]] ||
        mu::usage_error "${flag}: '${value}' is not a valid name"
      if [[ ${flag} == --namespace ]]; then MU_NAMESPACE=${value}; else MU_DAEMONSET=${value}; fi
      ;;
    --timeout)
      [[ ${value} =~ ^[1-9][0-9]{0,6}$ ]] ||
        mu::usage_error "--timeout: '${value}' is not a whole number of seconds greater than 0"
      MU_TIMEOUT=${value}
      ;;
  esac
}

# mu::parse_args ARGS... sets MU_NAMESPACE, MU_DAEMONSET, MU_TIMEOUT,
# MU_DRY_RUN and MU_NODES, or exits 2 (0 for --help).
mu::parse_args() {
  MU_NODES=()
  while (($# > 0)); do
    case $1 in
      -h | --help)
        mu::usage
        exit 0
        ;;
      --dry-run) MU_DRY_RUN=1 ;;
      --namespace | --daemonset | --timeout)
        (($# >= 2)) || mu::usage_error "$1 needs a value"
        mu::set_flag "$1" "$2"
        shift
        ;;
      --namespace=* | --daemonset=* | --timeout=*) mu::set_flag "${1%%=*}" "${1#*=}" ;;
      --)
        shift
        MU_NODES+=("$@")
        break
        ;;
      -*) mu::usage_error "unknown flag: $1" ;;
      *) MU_NODES+=("$1") ;;
    esac
    shift
  done
  ((${#MU_NODES[@]} > 0)) || mu::usage_error "no NODE given"
  local node
  for node in "${MU_NODES[@]}"; do
    [[ ${node} =~ ^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$ ]] || mu::usage_error "'${node}' is not a valid node name"
  done
}

# mu::decode_label_name ESCAPED prints the flex driver name a label name
# stands for: each "_" and two lower-case hex digits is that byte
# (nodeplug.io_2ffuse is nodeplug.io/fuse), as pkg/mountpod writes them.
# It returns 1 for a malformed or NUL escape.
mu::decode_label_name() {
  local LC_ALL=C
  local rest=$1 out="" chunk hex
  [[ -n ${rest} ]] || return 1
  while [[ -n ${rest} ]]; do
    if [[ ${rest} == _* ]]; then
      hex=${rest:1:2}
      [[ ${hex} =~ ^[0-9a-f]{2}$ && ${hex} != 00 ]] || return 1
      printf -v chunk '%b' "\\x${hex}"
      rest=${rest:3}
    else
      chunk=${rest%%_*}
      rest=${rest:${#chunk}}
    fi
    out+=${chunk}
  done
  printf '%s\n' "${out}"
}

# mu::plugins_from_labels reads the label keys set to "true" of a mount pod,
# one a line, and prints the plugins it serves, one a line:
# "intree<TAB>kubernetes.io/<name>" or "flex<TAB><driver>". A flex key that
# does not decode is reported on stderr and skipped (the kubelet ignores it
# too).
mu::plugins_from_labels() {
  local key driver
  while IFS= read -r key; do
    case ${key} in
      mount.kubernetes.io/container) ;;
      mount.kubernetes.io/?*) printf 'intree\tkubernetes.io/%s\n' "${key#*/}" ;;
      flexvolume.mount.kubernetes.io/?*)
        if driver=$(mu::decode_label_name "${key#*/}"); then
          printf 'flex\t%s\n' "${driver}"
        else
          printf 'warning: label %s: malformed escape, ignored\n' "${key}" >&2
        fi
        ;;
    esac
  done
}

# --- output and timing ---------------------------------------------------

MU_NODE=""
MU_NODE_T0=0
MU_STEP=""
MU_STEP_T0=0
MU_NODE_STEPS=()

mu::say() { printf '[%s] %s\n' "${MU_NODE}" "$*"; }
mu::warn() { printf '[%s] warning: %s\n' "${MU_NODE}" "$*" >&2; }

# mu::now_us prints the time in microseconds.
mu::now_us() {
  if [[ -n ${EPOCHREALTIME:-} ]]; then
    local t=${EPOCHREALTIME//[!0-9]/}
    printf '%s\n' "$((10#${t}))"
  else
    printf '%s\n' "$(($(date +%s%N) / 1000))"
  fi
}

# mu::fmt_s MICROSECONDS prints seconds with one decimal.
mu::fmt_s() {
  local tenths=$((($1 + 50000) / 100000))
  printf '%d.%d' $((tenths / 10)) $((tenths % 10))
}

mu::step_start() {
  MU_STEP=$1
  MU_STEP_T0=$(mu::now_us)
}

# mu::step_done prints "[NODE] STEP: S s" and keeps it for the summary.
mu::step_done() {
  local now s
  now=$(mu::now_us)
  s=$(mu::fmt_s $((now - MU_STEP_T0)))
  mu::say "${MU_STEP}: ${s} s"
  MU_NODE_STEPS+=("${MU_STEP} ${s} s")
  MU_STEP=""
}

# mu::record RESULT adds the node's summary line.
mu::record() {
  local now steps=""
  now=$(mu::now_us)
  if ((${#MU_NODE_STEPS[@]} > 0)); then
    steps=$(printf '%s, ' "${MU_NODE_STEPS[@]}")
    steps=" (${steps%, })"
  fi
  MU_SUMMARY+=("[${MU_NODE}] $1: $(mu::fmt_s $((now - MU_NODE_T0))) s${steps}")
}

# mu::finish CODE prints the summary and exits with CODE.
mu::finish() {
  if ((${#MU_SUMMARY[@]} > 0)); then
    printf 'summary:\n'
    printf '  %s\n' "${MU_SUMMARY[@]}"
  fi
  exit "$1"
}

# mu::fail CODE MESSAGE [HINT] ends the run: the node's summary says why.
mu::fail() {
  local code=$1
  printf '[%s] error: %s\n' "${MU_NODE:-?}" "$2" >&2
  [[ -z ${3:-} ]] || printf '[%s] hint: %s\n' "${MU_NODE:-?}" "$3" >&2
  local what=failed
  ((code != MU_EXIT_REFUSED)) || what=refused
  ((code != MU_EXIT_TIMEOUT)) || what="timed out"
  [[ -z ${MU_NODE} ]] || mu::record "${what} (exit ${code})${MU_STEP:+ in ${MU_STEP}}"
  mu::finish "${code}"
}

mu::interrupted() {
  trap - INT TERM
  if [[ -n ${MU_NODE} ]]; then
    printf '[%s] interrupted%s. If the node is tainted %s, run the script again to finish (it resumes), or untaint by hand: %s taint nodes %s %s:%s-\n' \
      "${MU_NODE}" "${MU_STEP:+ in ${MU_STEP}}" "${MU_TAINT_KEY}" "${KUBECTL}" "${MU_NODE}" "${MU_TAINT_KEY}" "${MU_TAINT_EFFECT}" >&2
    mu::record "interrupted${MU_STEP:+ in ${MU_STEP}}"
  fi
  mu::finish 130
}

# --- kubectl -----------------------------------------------------------------

mu::kubectl() { "${KUBECTL}" "$@"; }

# mu::get FILE ARGS... runs kubectl get ARGS -o json into FILE; kubectl's
# error goes to FILE.err.
mu::get() {
  local file=$1
  shift
  mu::kubectl get "$@" -o json >"${file}" 2>"${file}.err"
}

# mu::get_or_fail CODE FILE ARGS... is mu::get that ends the run on failure.
mu::get_or_fail() {
  local code=$1 file=$2
  shift 2
  mu::get "${file}" "$@" || mu::fail "${code}" "kubectl get $*: $(<"${file}.err")"
}

mu::deadline() { printf '%s\n' "$(($(mu::now_us) + MU_TIMEOUT * 1000000))"; }
mu::past() { (($(mu::now_us) >= $1)); }

# --- jq programs -------------------------------------------------------------

# tolerates_forever: the input object's .spec.tolerations tolerate the
# taint for ever (no tolerationSeconds), as the taint manager decides.
readonly MU_JQ_TOLERATES='
def tolerates_forever($key; $value; $effect):
  any((.spec.tolerations // [])[];
    ((.effect // "") == "" or .effect == $effect)
    and (if (.operator // "Equal") == "Exists"
         then ((.key // "") == "" or .key == $key)
         else ((.key // "") == $key and (.value // "") == $value) end)
    and .tolerationSeconds == null);'

# The selector of a DaemonSet as a kubectl -l argument.
readonly MU_JQ_SELECTOR='
.spec.selector as $s
| [ ($s.matchLabels // {} | to_entries[] | "\(.key)=\(.value)"),
    (($s.matchExpressions // [])[]
     | if .operator == "In" then "\(.key) in (\(.values | join(",")))"
       elif .operator == "NotIn" then "\(.key) notin (\(.values | join(",")))"
       elif .operator == "Exists" then .key
       elif .operator == "DoesNotExist" then "!\(.key)"
       else error("unknown selector operator \(.operator)") end) ]
| join(",")'

# Lists what still uses a volume of the served plugins, as TSV lines:
#   pod  NS/NAME  VOLUME  PLUGIN  yes|no (tolerates the taint for ever)
#   node in-use|attached  UNIQUE-VOLUME-NAME
# Inputs: $pods (pods on the node), $pvcs, $pvs, $nodeobj, $flex and $intree
# (served flex drivers and in-tree plugin names).
readonly MU_JQ_IN_USE=${MU_JQ_TOLERATES}'
def intree_field: {"kubernetes.io/local-volume": "local", "kubernetes.io/nfs": "nfs",
  "kubernetes.io/iscsi": "iscsi", "kubernetes.io/fc": "fc"}[.];
def served_plugin:
  . as $src
  | if ($src.flexVolume // null) != null then
      $src.flexVolume.driver | select(. as $d | any($flex[]; . == $d))
    else
      $intree[] | select((intree_field) as $f | $f != null and ($src[$f] // null) != null)
    end;
( $pods[0].items[]
  | select(.metadata.namespace != $ns and .spec.nodeName == $node)
  | select(.status.phase != "Succeeded" and .status.phase != "Failed")
  | . as $pod
  | (if tolerates_forever($key; $value; $effect) then "yes" else "no" end) as $tol
  | (.spec.volumes // [])[]
  | . as $v
  | (if $v.persistentVolumeClaim != null then $v.persistentVolumeClaim.claimName
     elif $v.ephemeral != null then "\($pod.metadata.name)-\($v.name)"
     else null end) as $claim
  | "\($pod.metadata.namespace)/\($pod.metadata.name)" as $who
  | if $claim == null then
      ($v | served_plugin) as $plugin
      | ["pod", $who, $v.name, $plugin, $tol]
    else
      ($pvcs[0].items[]
       | select(.metadata.namespace == $pod.metadata.namespace and .metadata.name == $claim)
       | .spec.volumeName // empty) as $pv
      | ($pvs[0].items[] | select(.metadata.name == $pv) | .spec | served_plugin) as $plugin
      | ["pod", $who, "\($v.name) (claim \($claim), PV \($pv))", $plugin, $tol]
    end
  | @tsv ),
( (($flex | map("flexvolume-" + . + "/")) + ($intree | map(. + "/"))) as $prefixes
  | def served: . as $u | any($prefixes[]; . as $p | $u | startswith($p));
    ( ($nodeobj[0].status.volumesInUse // [])[] | select(served) | ["node", "in-use", .] ),
    ( ($nodeobj[0].status.volumesAttached // [])[] | .name | select(served) | ["node", "attached", .] )
  | @tsv )'

# One line per pod of the DaemonSet (owner uid $uid), no field empty (read
# would merge tabs):
#   NAME UID REVISION-HASH|- deleting(0|1) ready(0|1) IMAGES
readonly MU_JQ_MOUNT_PODS='
.items[]
| select(any(.metadata.ownerReferences[]?; .uid == $uid))
| [ .metadata.name, .metadata.uid,
    (.metadata.labels["controller-revision-hash"] // "-"),
    (if .metadata.deletionTimestamp then 1 else 0 end),
    (if any(.status.conditions[]?; .type == "Ready" and .status == "True") then 1 else 0 end),
    ([.spec.containers[].image] | join(",")) ]
| @tsv'

# --- steps ---------------------------------------------------------------

MU_DS_UID=""
MU_SELECTOR=""
MU_REV=""
MU_TAINTED=0
MU_TAINT_VALUE=""
MU_OLD_POD=""
MU_OLD_UID=""
MU_OLD_REV=""
MU_NEW_POD=""
MU_NEW_READY=0
MU_NEW_IMAGES=""
MU_FLEX=()
MU_INTREE=()

# mu::load_daemonset checks the DaemonSet (exit 2 if missing or not
# OnDelete), waits until its controller has seen its latest spec, and sets
# MU_DS_UID, MU_SELECTOR and MU_REV (the hash of its newest revision).
mu::load_daemonset() {
  local ds=${MU_TMP}/ds.json revs=${MU_TMP}/revisions.json strategy deadline
  deadline=$(mu::deadline)
  while true; do
    mu::get_or_fail "${MU_EXIT_USAGE}" "${ds}" daemonset "${MU_DAEMONSET}" -n "${MU_NAMESPACE}"
    jq -e '(.status.observedGeneration // 0) >= (.metadata.generation // 0)' "${ds}" >/dev/null && break
    mu::past "${deadline}" && mu::fail "${MU_EXIT_TIMEOUT}" \
      "the DaemonSet controller has not seen generation $(jq -r .metadata.generation "${ds}") of ${MU_NAMESPACE}/${MU_DAEMONSET} within ${MU_TIMEOUT} s" \
      "check that kube-controller-manager runs"
    sleep "${MU_POLL_INTERVAL}"
  done
  strategy=$(jq -r '.spec.updateStrategy.type // "RollingUpdate"' "${ds}")
  [[ ${strategy} == OnDelete ]] || mu::fail "${MU_EXIT_USAGE}" \
    "DaemonSet ${MU_NAMESPACE}/${MU_DAEMONSET} has updateStrategy ${strategy}, not OnDelete: with it the DaemonSet controller replaces mount pods itself, killing the FUSE daemons of volumes in use" \
    "set spec.updateStrategy.type: OnDelete (deploy/mount-utilities/daemonset.yaml), then run this script"
  MU_DS_UID=$(jq -r '.metadata.uid // ""' "${ds}")
  MU_SELECTOR=$(jq -r "${MU_JQ_SELECTOR}" "${ds}")
  [[ -n ${MU_SELECTOR} ]] || mu::fail "${MU_EXIT_USAGE}" "DaemonSet ${MU_NAMESPACE}/${MU_DAEMONSET} has an empty selector"
  mu::get_or_fail "${MU_EXIT_FAILED}" "${revs}" controllerrevisions -n "${MU_NAMESPACE}" -l "${MU_SELECTOR}"
  MU_REV=$(jq -r --arg uid "${MU_DS_UID}" --arg name "${MU_DAEMONSET}" '
    [.items[] | select(any(.metadata.ownerReferences[]?; .uid == $uid))]
    | if length == 0 then ""
      else max_by(.revision)
           | .metadata.labels["controller-revision-hash"] // (.metadata.name | ltrimstr($name + "-"))
      end' "${revs}")
  [[ -n ${MU_REV} ]] || mu::fail "${MU_EXIT_USAGE}" \
    "DaemonSet ${MU_NAMESPACE}/${MU_DAEMONSET} has no ControllerRevision yet" "try again in a moment"
}

# mu::load_node reads the node into node.json and sets MU_TAINTED and
# MU_TAINT_VALUE from the upgrade taint.
mu::load_node() {
  local node=${MU_TMP}/node.json taint
  mu::get_or_fail "${MU_EXIT_USAGE}" "${node}" node "${MU_NODE}"
  taint=$(jq -r --arg k "${MU_TAINT_KEY}" --arg e "${MU_TAINT_EFFECT}" \
    '[.spec.taints[]? | select(.key == $k and .effect == $e)] | if length == 0 then "no" else "yes " + (.[0].value // "") end' "${node}")
  MU_TAINTED=0
  MU_TAINT_VALUE=""
  if [[ ${taint} == yes* ]]; then
    MU_TAINTED=1
    MU_TAINT_VALUE=${taint#yes }
  fi
}

# mu::load_mount_pods finds the DaemonSet's pods on the node: MU_OLD_POD
# (not of the current revision, not being deleted) and MU_NEW_POD (of the
# current revision, not being deleted; MU_NEW_READY, MU_NEW_IMAGES). It
# returns 1 if kubectl fails.
mu::load_mount_pods() {
  local pods=${MU_TMP}/mount-pods.json name uid rev deleting ready images
  MU_OLD_POD="" MU_OLD_UID="" MU_OLD_REV="" MU_NEW_POD="" MU_NEW_READY=0 MU_NEW_IMAGES=""
  mu::get "${pods}" pods -n "${MU_NAMESPACE}" -l "${MU_SELECTOR}" --field-selector "spec.nodeName=${MU_NODE}" || return 1
  while IFS=$'\t' read -r name uid rev deleting ready images; do
    ((deleting == 0)) || continue
    if [[ ${rev} == "${MU_REV}" ]]; then
      if [[ -z ${MU_NEW_POD} ]] || ((ready > MU_NEW_READY)); then
        MU_NEW_POD=${name} MU_NEW_READY=${ready} MU_NEW_IMAGES=${images}
      fi
    elif [[ -z ${MU_OLD_POD} ]]; then
      MU_OLD_POD=${name} MU_OLD_UID=${uid} MU_OLD_REV=${rev}
    else
      mu::warn "more than one old mount pod on the node; upgrading ${MU_OLD_POD} first, ${name} on the next run"
    fi
  done < <(jq -r --arg uid "${MU_DS_UID}" "${MU_JQ_MOUNT_PODS}" "${pods}")
}

# mu::check_tolerations exits 2 unless the old pod and the DaemonSet's
# template tolerate the taint for ever: tainting would evict the mount pod
# before the volumes it serves are unmounted.
mu::check_tolerations() {
  local what file prog
  prog="${MU_JQ_TOLERATES} tolerates_forever(\$key; \$value; \$effect)"
  for what in pod template; do
    if [[ ${what} == pod ]]; then
      file=${MU_TMP}/old-pod.json
      jq --arg n "${MU_OLD_POD}" '.items[] | select(.metadata.name == $n)' "${MU_TMP}/mount-pods.json" >"${file}"
    else
      file=${MU_TMP}/template.json
      jq '.spec.template' "${MU_TMP}/ds.json" >"${file}"
    fi
    jq -e --arg key "${MU_TAINT_KEY}" --arg value "$(mu::taint_value)" --arg effect "${MU_TAINT_EFFECT}" \
      "${prog}" "${file}" >/dev/null || mu::fail "${MU_EXIT_USAGE}" \
      "the ${what} of ${MU_NAMESPACE}/${MU_DAEMONSET} does not tolerate the taint ${MU_TAINT_KEY}:${MU_TAINT_EFFECT}: it would evict the mount pod with the volumes it serves still mounted" \
      "add 'tolerations: [{operator: Exists}]' to the DaemonSet's pod template, delete this node's pod by hand once, then run this script"
  done
}

# mu::taint_value is the old pod's name, or its uid if the name is longer
# than a taint value may be (63).
mu::taint_value() {
  if ((${#MU_OLD_POD} <= 63)); then printf '%s\n' "${MU_OLD_POD}"; else printf '%s\n' "${MU_OLD_UID}"; fi
}

# mu::load_plugins sets MU_FLEX and MU_INTREE from the old pod's labels.
mu::load_plugins() {
  local kind plugin
  MU_FLEX=() MU_INTREE=()
  while IFS=$'\t' read -r kind plugin; do
    if [[ ${kind} == flex ]]; then MU_FLEX+=("${plugin}"); else MU_INTREE+=("${plugin}"); fi
  done < <(jq -r '.metadata.labels // {} | to_entries[] | select(.value == "true") | .key' "${MU_TMP}/old-pod.json" |
    mu::plugins_from_labels)
  local all=("${MU_INTREE[@]}" "${MU_FLEX[@]}")
  if ((${#all[@]} == 0)); then
    mu::say "pod ${MU_OLD_POD} serves no volume plugin (no mount label)"
  else
    mu::say "pod ${MU_OLD_POD} serves: ${all[*]}"
  fi
  for plugin in "${MU_INTREE[@]}"; do
    case ${plugin} in
      kubernetes.io/local-volume | kubernetes.io/nfs | kubernetes.io/iscsi | kubernetes.io/fc) ;;
      *) mu::warn "pods' volumes of ${plugin} are not recognised; only the node's volumesInUse/volumesAttached are checked for it" ;;
    esac
  done
}

# mu::scan_in_use writes what still uses a served volume to in-use.tsv (see
# MU_JQ_IN_USE); it returns 1 if kubectl fails.
mu::scan_in_use() {
  local pods=${MU_TMP}/node-pods.json pvcs=${MU_TMP}/pvcs.json pvs=${MU_TMP}/pvs.json
  local node=${MU_TMP}/node.json empty='{"items":[]}'
  mu::get "${pods}" pods -A --field-selector "spec.nodeName=${MU_NODE}" || return 1
  mu::get "${node}" node "${MU_NODE}" || return 1
  if jq -e --arg ns "${MU_NAMESPACE}" \
    'any(.items[] | select(.metadata.namespace != $ns) | .spec.volumes[]?; .persistentVolumeClaim != null or .ephemeral != null)' \
    "${pods}" >/dev/null; then
    mu::get "${pvcs}" pvc -A || return 1
    mu::get "${pvs}" pv || return 1
  else
    printf '%s\n' "${empty}" >"${pvcs}"
    printf '%s\n' "${empty}" >"${pvs}"
  fi
  jq -n -r --slurpfile pods "${pods}" --slurpfile pvcs "${pvcs}" --slurpfile pvs "${pvs}" \
    --slurpfile nodeobj "${node}" \
    --argjson flex "$(mu::json_array "${MU_FLEX[@]}")" --argjson intree "$(mu::json_array "${MU_INTREE[@]}")" \
    --arg ns "${MU_NAMESPACE}" --arg node "${MU_NODE}" \
    --arg key "${MU_TAINT_KEY}" --arg value "$(mu::taint_value)" --arg effect "${MU_TAINT_EFFECT}" \
    "${MU_JQ_IN_USE}" >"${MU_TMP}/in-use.tsv"
  mu::scan_fuse_mounts
}

# mu::scan_fuse_mounts adds to in-use.tsv the FUSE mounts in the old mount
# pod's mount table: their daemons run in that pod and die with it. A
# volume's pod object is gone before the kubelet has unmounted it (and
# volumes that do not attach never show in status.volumesInUse), so this is
# what says that the unmount has happened. The pod needs cat.
mu::scan_fuse_mounts() {
  [[ -n ${MU_OLD_POD:-} ]] || return 0
  if ! mu::kubectl exec -n "${MU_NAMESPACE}" "${MU_OLD_POD}" -- cat /proc/self/mountinfo \
    >"${MU_TMP}/mountinfo" 2>"${MU_TMP}/exec.err"; then
    mu::warn "cannot read the mount table of ${MU_OLD_POD}: $(tail -n 1 "${MU_TMP}/exec.err")"
    return 0
  fi
  # mountinfo: field 5 is the mount point; after the "-" field, the type.
  awk '{ for (i = 7; i <= NF; i++) if ($i == "-") { if ($(i + 1) ~ /^fuse/) printf "fuse\t%s\n", $5; break } }' \
    "${MU_TMP}/mountinfo" >>"${MU_TMP}/in-use.tsv"
}

mu::json_array() { jq -cn '$ARGS.positional' --args "$@"; }

# mu::describe_in_use [tolerating] prints in-use.tsv for people (only the
# pods that tolerate the taint with "tolerating").
mu::describe_in_use() {
  local only=${1:-} kind a b c d
  while IFS=$'\t' read -r kind a b c d; do
    case ${kind} in
      pod)
        if [[ ${d} == yes ]]; then
          printf '  pod %s: volume %s of %s (tolerates the taint: not evicted)\n' "${a}" "${b}" "${c}"
        elif [[ -z ${only} ]]; then
          printf '  pod %s: volume %s of %s\n' "${a}" "${b}" "${c}"
        fi
        ;;
      fuse)
        [[ -z ${only} ]] || continue
        printf '  pod %s/%s: FUSE mount %s (its daemon runs in that pod)\n' "${MU_NAMESPACE}" "${MU_OLD_POD}" "${a}"
        ;;
      node)
        [[ -z ${only} ]] || continue
        if [[ ${a} == in-use ]]; then
          printf '  node %s: %s in use (status.volumesInUse)\n' "${MU_NODE}" "${b}"
        else
          printf '  node %s: %s attached (status.volumesAttached)\n' "${MU_NODE}" "${b}"
        fi
        ;;
    esac
  done <"${MU_TMP}/in-use.tsv"
}

mu::has_tolerating_user() { awk -F'\t' '$1 == "pod" && $5 == "yes" { f = 1 } END { exit !f }' "${MU_TMP}/in-use.tsv"; }

# mu::refuse ends the run with exit 3, untainting the node if it is tainted.
mu::refuse() {
  {
    printf "[%s] REFUSED: never delete a mount pod while a volume it serves is mounted: a FUSE daemon dies with its pod, and every consumer's data path with it.\n" "${MU_NODE}"
    printf '[%s] these pods tolerate the taint %s:%s, so they are not evicted, and use volumes that %s serves:\n' \
      "${MU_NODE}" "${MU_TAINT_KEY}" "${MU_TAINT_EFFECT}" "${MU_OLD_POD}"
    mu::describe_in_use tolerating
  } >&2
  mu::untaint_after_failure "nothing was changed"
  mu::fail "${MU_EXIT_REFUSED}" "${MU_OLD_POD} was not deleted" \
    "stop those pods (or drop their toleration), then run the script again"
}

# mu::untaint_after_failure NOTHING_MESSAGE removes the taint on a refusal
# or a drain timeout: the old pod still runs, so the node goes back to what
# it was.
mu::untaint_after_failure() {
  if ((MU_TAINTED == 0)); then
    mu::say "$1"
  elif ((MU_DRY_RUN)); then
    mu::say "dry run: would remove the taint ${MU_TAINT_KEY}:${MU_TAINT_EFFECT}"
  elif mu::kubectl taint nodes "${MU_NODE}" "${MU_TAINT_KEY}:${MU_TAINT_EFFECT}-" >/dev/null; then
    MU_TAINTED=0
    mu::say "removed the taint ${MU_TAINT_KEY}:${MU_TAINT_EFFECT}; ${MU_OLD_POD} still runs"
  else
    mu::warn "could not remove the taint: run ${KUBECTL} taint nodes ${MU_NODE} ${MU_TAINT_KEY}:${MU_TAINT_EFFECT}-"
  fi
}

mu::taint() {
  local value
  value=$(mu::taint_value)
  if ((MU_TAINTED)) && [[ ${MU_TAINT_VALUE} == "${value}" ]]; then
    mu::say "already tainted ${MU_TAINT_KEY}=${value}:${MU_TAINT_EFFECT}"
    return
  fi
  if ((MU_DRY_RUN)); then
    mu::say "dry run: would taint ${MU_TAINT_KEY}=${value}:${MU_TAINT_EFFECT}"
    MU_TAINTED=1 MU_TAINT_VALUE=${value}
    return
  fi
  mu::step_start taint
  mu::kubectl taint nodes "${MU_NODE}" "${MU_TAINT_KEY}=${value}:${MU_TAINT_EFFECT}" --overwrite >/dev/null ||
    mu::fail "${MU_EXIT_FAILED}" "could not taint the node"
  MU_TAINTED=1 MU_TAINT_VALUE=${value}
  mu::step_done
}

# mu::drain waits until no served volume is in use; refuses (3) when a pod
# that tolerates the taint uses one, and untaints and exits 4 on timeout.
mu::drain() {
  local deadline last="" now_list
  if ((MU_DRY_RUN)); then
    if [[ -s ${MU_TMP}/in-use.tsv ]]; then
      mu::say "dry run: would wait up to ${MU_TIMEOUT} s until these are gone (the taint evicts the pods):"
      mu::describe_in_use
    else
      mu::say "dry run: no volume of these plugins is in use now"
    fi
    return
  fi
  mu::step_start drain
  deadline=$(mu::deadline)
  while true; do
    if mu::scan_in_use; then
      mu::has_tolerating_user && mu::refuse
      [[ -s ${MU_TMP}/in-use.tsv ]] || break
      now_list=$(mu::describe_in_use)
      if [[ ${now_list} != "${last}" ]]; then
        mu::say "waiting for these to go:"
        printf '%s\n' "${now_list}"
        last=${now_list}
      fi
    else
      mu::warn "$(cat "${MU_TMP}"/*.err 2>/dev/null | tail -n 1); retrying"
    fi
    if mu::past "${deadline}"; then
      {
        printf '[%s] timed out after %s s; still in use:\n' "${MU_NODE}" "${MU_TIMEOUT}"
        mu::describe_in_use
      } >&2
      mu::untaint_after_failure "the node was not tainted"
      mu::fail "${MU_EXIT_TIMEOUT}" "${MU_OLD_POD} was not deleted: never delete a mount pod while a volume it serves is mounted" \
        "find out why those pods or volumes stay (a PodDisruptionBudget does not apply to taint eviction; a finalizer or a stuck unmount may), or raise --timeout"
    fi
    sleep "${MU_POLL_INTERVAL}"
  done
  mu::step_done
}

mu::delete_old() {
  if ((MU_DRY_RUN)); then
    mu::say "dry run: would delete pod ${MU_NAMESPACE}/${MU_OLD_POD} (revision ${MU_OLD_REV} -> ${MU_REV})"
    return
  fi
  mu::step_start delete
  if ! mu::kubectl delete pod "${MU_OLD_POD}" -n "${MU_NAMESPACE}" --ignore-not-found --wait=true \
    --timeout="${MU_TIMEOUT}s" >/dev/null 2>"${MU_TMP}/delete.err"; then
    local code=${MU_EXIT_FAILED}
    grep -qi 'timed out' "${MU_TMP}/delete.err" && code=${MU_EXIT_TIMEOUT}
    mu::fail "${code}" "deleting ${MU_OLD_POD}: $(<"${MU_TMP}/delete.err")" \
      "the node stays tainted; run the script again to finish"
  fi
  mu::step_done
}

# mu::wait_ready waits until the DaemonSet's pod of the current revision on
# the node is Ready; on timeout it exits 4 and leaves the taint (a node
# without a working mount pod should not get consumers back).
mu::wait_ready() {
  local deadline
  if ((MU_DRY_RUN)); then
    mu::say "dry run: would wait up to ${MU_TIMEOUT} s for the new pod (revision ${MU_REV}) to be Ready"
    return
  fi
  mu::step_start ready
  deadline=$(mu::deadline)
  until mu::load_mount_pods && [[ -n ${MU_NEW_POD} ]] && ((MU_NEW_READY)); do
    mu::past "${deadline}" && mu::fail "${MU_EXIT_TIMEOUT}" \
      "no Ready pod of ${MU_NAMESPACE}/${MU_DAEMONSET} revision ${MU_REV} on the node after ${MU_TIMEOUT} s${MU_NEW_POD:+ (${MU_NEW_POD} is not Ready)}; the node stays tainted" \
      "see ${KUBECTL} -n ${MU_NAMESPACE} describe pod ${MU_NEW_POD:-<pod>}; run the script again once it is Ready, or untaint by hand: ${KUBECTL} taint nodes ${MU_NODE} ${MU_TAINT_KEY}:${MU_TAINT_EFFECT}-"
    sleep "${MU_POLL_INTERVAL}"
  done
  mu::say "new pod ${MU_NEW_POD} is Ready, image ${MU_NEW_IMAGES}"
  mu::step_done
}

mu::untaint() {
  ((MU_TAINTED)) || return 0
  if ((MU_DRY_RUN)); then
    mu::say "dry run: would remove the taint ${MU_TAINT_KEY}:${MU_TAINT_EFFECT}"
    return
  fi
  mu::step_start untaint
  mu::kubectl taint nodes "${MU_NODE}" "${MU_TAINT_KEY}:${MU_TAINT_EFFECT}-" >/dev/null ||
    mu::fail "${MU_EXIT_FAILED}" "could not remove the taint" \
      "run ${KUBECTL} taint nodes ${MU_NODE} ${MU_TAINT_KEY}:${MU_TAINT_EFFECT}-"
  MU_TAINTED=0
  mu::step_done
}

# mu::finish_without_old_pod handles a node whose old pod is gone: it waits
# for the new pod (if it is not Ready yet) and untaints (if tainted).
mu::finish_without_old_pod() {
  if ((MU_TAINTED == 0)) && [[ -z ${MU_NEW_POD} ]]; then
    mu::fail "${MU_EXIT_USAGE}" "no pod of ${MU_NAMESPACE}/${MU_DAEMONSET} on the node" \
      "check the DaemonSet's node selector and the node's taints; nothing to upgrade here"
  fi
  if ((MU_TAINTED == 0)) && ((MU_NEW_READY)); then
    mu::say "up to date: ${MU_NEW_POD} runs revision ${MU_REV} and is Ready (${MU_NEW_IMAGES})"
    mu::record "up to date"
    return
  fi
  ((MU_TAINTED == 0)) || mu::say "resuming: the node is tainted ${MU_TAINT_KEY}=${MU_TAINT_VALUE}:${MU_TAINT_EFFECT} and that pod is gone"
  if ((MU_NEW_READY)); then
    mu::say "pod ${MU_NEW_POD} of revision ${MU_REV} is Ready, image ${MU_NEW_IMAGES}"
  else
    mu::wait_ready
  fi
  mu::untaint
  if ((MU_DRY_RUN)); then mu::record "dry run: would finish"; else mu::record "finished: ${MU_NEW_POD} (${MU_NEW_IMAGES})"; fi
}

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
