# shellcheck shell=bash disable=SC2016,SC2034 # jq $names; variables read in the other files
# The read-only steps of hack/mount-utilities-upgrade.sh: load the
# DaemonSet, the node, its mount pods and the plugins they serve, check the
# tolerations, find what still uses a served volume, and refuse (which
# removes the script's own taint, through act.sh). Sourced by
# hack/mount-utilities-upgrade.sh (not run).
# The jq programs below are single-quoted: their $names are jq's.

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
MU_FUSE_OUTSIDE_SAID=""
MU_FUSE_UNKNOWN_SAID=0
MU_FUSE_HOSTPID_SAID=0
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

# mu::scan_fuse_mounts adds to in-use.tsv the FUSE mounts whose daemon runs
# in the old mount pod: they die with it. A volume's pod object is gone
# before the kubelet has unmounted it (and volumes that do not attach never
# show in status.volumesInUse), so this is what says that the unmount has
# happened. It runs MU_POD_FUSE_PROBE in the container the kubelet uses
# (annotation mount.kubernetes.io/container, else the first), which needs
# sh and cat there. A FUSE mount counts when a process of that container
# holds a /dev/fuse descriptor of its connection (fdinfo "fuse_connection",
# the mount's device number); FUSE mounts that propagated in from the host
# (FUSE-based CSI drivers, say) have their daemon elsewhere and do not
# count. If it cannot tell (a kernel that does not name the connection,
# before Linux 6.16, or a descriptor whose connection matches no FUSE
# mount), every FUSE mount counts.
# If the table cannot be read, the run stops: without it the script cannot
# tell whether a FUSE volume is still in use.
mu::scan_fuse_mounts() {
  [[ -n ${MU_OLD_POD:-} ]] || return 0
  local probe=${MU_TMP}/pod-mounts container rc=0
  if ((MU_FUSE_HOSTPID_SAID == 0)) && jq -e '.spec.hostPID == true' "${MU_TMP}/old-pod.json" >/dev/null; then
    mu::warn "${MU_OLD_POD} runs with hostPID: it sees every FUSE daemon of the node, so FUSE mounts served from the host count too"
    MU_FUSE_HOSTPID_SAID=1
  fi
  container=$(jq -r '.metadata.annotations["mount.kubernetes.io/container"] // .spec.containers[0].name // ""' \
    "${MU_TMP}/old-pod.json")
  mu::kubectl exec -n "${MU_NAMESPACE}" "${MU_OLD_POD}" ${container:+-c "${container}"} -- sh -c "${MU_POD_FUSE_PROBE}" \
    >"${probe}" 2>"${MU_TMP}/exec.err" || rc=$?
  if ((rc != 0)) || ! grep -qx '#fuse-fds' "${probe}" || ! grep -q ' - ' "${probe}"; then
    mu::mount_table_unreadable "${container}" \
      "$( ((rc == 0)) && echo "no mount table in the output" || tail -n 2 "${MU_TMP}/exec.err" | tr '\n' ' ')"
  fi
  awk -v tsv="${MU_TMP}/in-use.tsv" -v outside="${MU_TMP}/fuse-outside" -v unknown="${MU_TMP}/fuse-unknown" \
    "${MU_AWK_POD_FUSE}" "${probe}"
  local why
  why=$(cat "${MU_TMP}/fuse-unknown")
  if [[ -n ${why} ]] && ((MU_FUSE_UNKNOWN_SAID == 0)); then
    if [[ ${why} == kernel ]]; then
      why="the kernel does not say which FUSE connection a daemon of ${MU_OLD_POD} serves (fdinfo has no fuse_connection before Linux 6.16)"
    else
      why="a /dev/fuse descriptor in ${MU_OLD_POD} serves ${why}, which no FUSE mount of its mount table has"
    fi
    mu::warn "${why}: waiting for every FUSE mount in the pod, also those served from outside it"
    MU_FUSE_UNKNOWN_SAID=1
  fi
  local outside_now
  outside_now=$(cat "${MU_TMP}/fuse-outside")
  if [[ -n ${outside_now} && ${outside_now} != "${MU_FUSE_OUTSIDE_SAID:-}" ]]; then
    mu::say "not waiting for these FUSE mounts: their daemon runs outside ${MU_OLD_POD} (it does not die with the pod):"
    sed 's/^/  /' <<<"${outside_now}"
  fi
  MU_FUSE_OUTSIDE_SAID=${outside_now}
}

# mu::mount_table_unreadable CONTAINER REASON stops the run (exit 1): it
# removes its own taint if it set one and never deletes the pod.
mu::mount_table_unreadable() {
  printf '[%s] cannot read the mount table of %s/%s (container %s): %s\n' \
    "${MU_NODE}" "${MU_NAMESPACE}" "${MU_OLD_POD}" "${1:-?}" "$2" >&2
  mu::untaint_after_failure "nothing was changed"
  mu::fail "${MU_EXIT_FAILED}" "stopped: without the mount table of ${MU_OLD_POD} the script cannot tell whether a FUSE daemon in it still serves a volume; ${MU_OLD_POD} was not deleted" \
    "the script needs create on pods/exec in ${MU_NAMESPACE}, and sh and cat in the pod's image; fix that and run it again"
}

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
