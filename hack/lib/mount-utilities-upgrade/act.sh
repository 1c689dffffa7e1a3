# shellcheck shell=bash
# The steps of hack/mount-utilities-upgrade.sh that change the cluster:
# taint, drain, delete the old mount pod, wait for the new one to be Ready,
# untaint, and finish a node whose old pod is gone. Each only says what it
# would do under --dry-run. Sourced by hack/mount-utilities-upgrade.sh (not
# run).

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
