#!/usr/bin/env bash
# Tests hack/mount-utilities-upgrade.sh without a cluster: the label
# decoding and the argument parsing (sourcing the script), and the decisions
# of whole runs against a fake kubectl ($KUBECTL) that answers from JSON
# files in a state directory, applies taints and pod deletions to them, and
# records every call (calls.log) and every mutating one (mutations.log).
# hack/verify.sh runs it. Needs jq. KEEP=1 keeps the state directories (in
# $TMPDIR) to look at.
set -o errexit -o nounset -o pipefail
# shellcheck source-path=SCRIPTDIR
source "$(dirname "${BASH_SOURCE[0]}")/lib/init.sh"
script=${NODEPLUG_ROOT}/hack/mount-utilities-upgrade.sh
# Like the other tests: skip without jq, but fail under CI=true.
if ! command -v jq >/dev/null; then
  [[ ${CI:-} != true ]] || np::die "mount-utilities-upgrade_test needs jq" "apt-get install jq"
  np::warn "mount-utilities-upgrade_test: skipped, jq is missing (apt-get install jq)"
  exit 0
fi

tmp=$(mktemp -d)
trap '[[ -n ${KEEP:-} ]] || rm -rf "${tmp}"' EXIT
failures=0
n=0
current=""

# case_start NAME starts a test case; fail MESSAGE fails it.
case_start() {
  current=$1
  n=$((n + 1))
}
fail() {
  failures=$((failures + 1))
  np::warn "case ${current}: $1"
}
expect_eq() { [[ $2 == "$3" ]] || fail "$1: got '$2', want '$3'"; }

# --- label decoding --------------------------------------------------------

# in_script COMMAND... runs COMMAND in a subshell that sourced the script.
in_script() {
  (
    # shellcheck source=hack/mount-utilities-upgrade.sh
    source "${script}" && "$@"
  )
}
decode() { in_script mu::decode_label_name "$1"; }

case_start "decode label names"
while read -r escaped want; do
  got=$(decode "${escaped}") || got="<error>"
  expect_eq "decode ${escaped}" "${got}" "${want}"
done <<'EOF'
nodeplug.io_2ffuse nodeplug.io/fuse
plain plain
example.com_2fa_5fb example.com/a_b
foo_2e foo.
a_25d a%d
a_5cx a\x
_2fabs /abs
a_c3_a9 aé
foo_2 <error>
foo_ <error>
foo_zz <error>
foo_2F <error>
foo_00 <error>
_ <error>
EOF
got=$(decode "") || got="<error>"
expect_eq "decode the empty name" "${got}" "<error>"

case_start "plugins from labels"
got=$(printf '%s\n' app mount.kubernetes.io/local-volume \
  flexvolume.mount.kubernetes.io/nodeplug.io_2ffuse mount.kubernetes.io/container \
  flexvolume.mount.kubernetes.io/bad_zz mount.kubernetes.io/ example.com/x mount.kubernetes.io/nfs |
  in_script mu::plugins_from_labels 2>"${tmp}/stderr")
want=$(printf 'intree\tkubernetes.io/local-volume\nflex\tnodeplug.io/fuse\nintree\tkubernetes.io/nfs')
expect_eq "plugins" "${got}" "${want}"
grep -q 'bad_zz: malformed escape' "${tmp}/stderr" || fail "a malformed flex label is not reported"

# --- argument parsing ------------------------------------------------------

# parse_and_print ARGS... (run by in_script) prints what mu::parse_args set.
parse_and_print() {
  mu::parse_args "$@"
  # shellcheck disable=SC2031 # mu::parse_args set them in this subshell
  printf '%s|%s|%s|%s|%s' "${MU_NAMESPACE}" "${MU_DAEMONSET}" "${MU_TIMEOUT}" "${MU_DRY_RUN}" "${MU_NODES[*]}"
}
# parse ARGS... prints the parsed settings, or "exit N".
parse() {
  local rc=0 out
  out=$(in_script parse_and_print "$@" 2>/dev/null) || rc=$?
  if ((rc != 0)); then printf 'exit %s' "${rc}"; else printf '%s' "${out}"; fi
}

case_start "argument parsing"
expect_eq "defaults" "$(parse node-a)" "kube-mount|mount-utilities|300|0|node-a"
expect_eq "all flags" "$(parse --namespace ns1 --daemonset ds1 --timeout 20 --dry-run node-a node-b)" "ns1|ds1|20|1|node-a node-b"
expect_eq "flag=value" "$(parse --namespace=ns2 --timeout=5 node-a --daemonset=d)" "ns2|d|5|0|node-a"
expect_eq "--" "$(parse --dry-run -- node-a node.b)" "kube-mount|mount-utilities|300|1|node-a node.b"
expect_eq "no node" "$(parse --dry-run)" "exit 2"
expect_eq "unknown flag" "$(parse --force node-a)" "exit 2"
expect_eq "flag without value" "$(parse node-a --timeout)" "exit 2"
expect_eq "timeout not a number" "$(parse --timeout 5m node-a)" "exit 2"
expect_eq "timeout zero" "$(parse --timeout 0 node-a)" "exit 2"
expect_eq "bad namespace" "$(parse --namespace Kube_Mount node-a)" "exit 2"
expect_eq "bad node name" "$(parse 'node a')" "exit 2"
rc=0
out=$("${script}" --help 2>&1) || rc=$?
expect_eq "--help exit" "${rc}" 0
[[ ${out} == Usage:* ]] || fail "--help does not print the usage"
rc=0
out=$("${script}" 2>&1) || rc=$?
expect_eq "no arguments exit" "${rc}" 2
grep -q '^Usage:' <<<"${out}" || fail "a usage error does not print the usage"

# --- the fake kubectl ------------------------------------------------------

mkdir -p "${tmp}/bin"
cat >"${tmp}/bin/kubectl" <<'FAKE'
#!/usr/bin/env bash
# Fake kubectl: answers from ${FAKE_STATE}/*.json. Hooks: after a taint is
# added, the evict_countdown-th "get pods -A" applies evict-pods.jq and
# evict-node.jq; a deleted pod is replaced by newpod.json, which turns Ready
# after ready_countdown "get pods -n" calls.
set -o errexit -o nounset -o pipefail
state=${FAKE_STATE:?}
call="$*"
printf '%s\n' "${call}" >>"${state}/calls.log"
verb=$1
shift
ns=default all=0 sel="" node="" ignore=0 pos=()
while (($# > 0)); do
  case $1 in
    --) break ;;
    -n | --namespace) ns=$2; shift ;;
    -c | --container) shift ;;
    -A | --all-namespaces) all=1 ;;
    -l | --selector) sel=$2; shift ;;
    --field-selector) node=${2#spec.nodeName=}; shift ;;
    -o) shift ;;
    --ignore-not-found) ignore=1 ;;
    -*) ;;
    *) pos+=("$1") ;;
  esac
  shift
done
notfound() { printf 'Error from server (NotFound): %s "%s" not found\n' "$1" "$2" >&2; exit 1; }
edit() { jq "$2" "${state}/$1" >"${state}/$1.new" && mv "${state}/$1.new" "${state}/$1"; }
# countdown FILE: decrements FILE; true when it reaches 0.
countdown() {
  [[ -f ${state}/$1 ]] || return 1
  local c
  c=$(($(<"${state}/$1") - 1))
  if ((c <= 0)); then rm "${state}/$1"; return 0; fi
  echo "${c}" >"${state}/$1"
  return 1
}
case ${verb} in
  get)
    case ${pos[0]} in
      daemonset)
        [[ -f ${state}/ds.json ]] && jq -e --arg n "${pos[1]}" --arg ns "${ns}" \
          '.metadata.name == $n and .metadata.namespace == $ns' "${state}/ds.json" >/dev/null ||
          notfound daemonsets.apps "${pos[1]}"
        cat "${state}/ds.json"
        ;;
      controllerrevisions) cat "${state}/revisions.json" ;;
      node)
        jq -e --arg n "${pos[1]}" '.metadata.name == $n' "${state}/node.json" >/dev/null || notfound nodes "${pos[1]}"
        cat "${state}/node.json"
        ;;
      pods)
        if ((all)); then
          if countdown evict_countdown; then
            edit pods.json "$(<"${state}/evict-pods.jq")"
            [[ ! -f ${state}/evict-node.jq ]] || edit node.json "$(<"${state}/evict-node.jq")"
          fi
        elif countdown ready_countdown; then
          edit pods.json '(.items[] | select(.metadata.labels["controller-revision-hash"] == "newhash") | .status.conditions) = [{"type": "Ready", "status": "True"}]'
        fi
        jq --arg ns "${ns}" --argjson all "${all}" --arg node "${node}" --arg sel "${sel}" '
          ($sel | split(",") | map(select(. != "") | split("=") | {key: .[0], value: .[1]})) as $want
          | .items |= map(select(($all == 1 or .metadata.namespace == $ns)
              and ($node == "" or .spec.nodeName == $node)
              and (.metadata.labels as $l | all($want[]; $l[.key] == .value))))' "${state}/pods.json"
        ;;
      pvc) cat "${state}/pvcs.json" ;;
      pv) cat "${state}/pvs.json" ;;
      *) echo "fake kubectl: unexpected get ${pos[0]}" >&2; exit 1 ;;
    esac
    ;;
  exec)
    # The probe's output in the old mount pod: a root and a kubelet-root
    # mount, state/mountinfo-host (FUSE mounts that came from the host),
    # state/mountinfo (the pod's own), "#fuse-fds", state/fuse-fds. The
    # countdown in state/unmount_countdown (polls left) removes mountinfo
    # and fuse-fds. With state/exec_fail the call fails with that message
    # (from the exec_fail_countdown-th call on, if that is set);
    # state/exec_empty makes it print nothing.
    if [[ -f ${state}/exec_fail ]]; then
      if [[ ! -f ${state}/exec_fail_countdown ]] || countdown exec_fail_countdown; then
        cat "${state}/exec_fail" >&2
        exit 1
      fi
    fi
    [[ ! -f ${state}/exec_empty ]] || exit 0
    if [[ -f ${state}/mountinfo ]] && countdown unmount_countdown; then rm -f "${state}/mountinfo" "${state}/fuse-fds"; fi
    printf '%s\n' '22 1 0:21 / / rw,relatime - overlay overlay rw' \
      '30 22 8:1 /var/lib/kubelet /var/lib/kubelet rw,relatime shared:1 - ext4 /dev/sda1 rw'
    cat "${state}/mountinfo-host" "${state}/mountinfo" 2>/dev/null || true
    echo '#fuse-fds'
    cat "${state}/fuse-fds" 2>/dev/null || true
    ;;
  taint)
    printf '%s\n' "${call}" >>"${state}/mutations.log"
    spec=${pos[2]}
    if [[ ${spec} == *- ]]; then
      key=${spec%%:*} effect=${spec#*:} effect=${effect%-}
      jq -e --arg k "${key}" --arg e "${effect}" 'any(.spec.taints[]?; .key == $k and .effect == $e)' \
        "${state}/node.json" >/dev/null || { echo "error: taint \"${spec%-}\" not found" >&2; exit 1; }
      edit node.json "$(jq -n --arg k "${key}" --arg e "${effect}" '"del(.spec.taints[] | select(.key == \($k | tojson) and .effect == \($e | tojson)))"' -r)"
    else
      key=${spec%%=*} rest=${spec#*=} value=${rest%%:*} effect=${rest#*:}
      edit node.json "$(jq -rn --arg k "${key}" --arg v "${value}" --arg e "${effect}" \
        '"(.spec.taints // []) as $t | .spec.taints = [$t[] | select(.key != \($k | tojson) or .effect != \($e | tojson))] + [{key: \($k | tojson), value: \($v | tojson), effect: \($e | tojson)}]"')"
      [[ ! -f ${state}/evict_after ]] || cp "${state}/evict_after" "${state}/evict_countdown"
    fi
    ;;
  delete)
    printf '%s\n' "${call}" >>"${state}/mutations.log"
    name=${pos[1]}
    if ! jq -e --arg n "${name}" --arg ns "${ns}" 'any(.items[]; .metadata.name == $n and .metadata.namespace == $ns)' \
      "${state}/pods.json" >/dev/null; then
      ((ignore)) && exit 0
      notfound pods "${name}"
    fi
    edit pods.json "del(.items[] | select(.metadata.name == \"${name}\" and .metadata.namespace == \"${ns}\"))"
    if [[ -f ${state}/newpod.json ]]; then
      edit pods.json ".items += [$(<"${state}/newpod.json")]"
      [[ ! -f ${state}/ready_after ]] || cp "${state}/ready_after" "${state}/ready_countdown"
    fi
    ;;
  *)
    printf '%s\n' "${call}" >>"${state}/mutations.log"
    echo "fake kubectl: unexpected ${verb}" >&2
    exit 1
    ;;
esac
FAKE
chmod +x "${tmp}/bin/kubectl"

# --- fixtures ----------------------------------------------------------------

ds_json() { # STRATEGY TOLERATIONS
  jq -n --arg s "$1" --argjson t "$2" '{
    apiVersion: "apps/v1", kind: "DaemonSet",
    metadata: {name: "mount-utilities", namespace: "kube-mount", uid: "ds-uid", generation: 2},
    spec: {selector: {matchLabels: {app: "mount-utilities"}}, updateStrategy: {type: $s},
      template: {metadata: {labels: {app: "mount-utilities"}}, spec: {tolerations: $t}}},
    status: {observedGeneration: 2}}'
}
revisions_json() {
  jq -n '{items: [
    {metadata: {name: "mount-utilities-oldhash", labels: {"controller-revision-hash": "oldhash"}, ownerReferences: [{kind: "DaemonSet", uid: "ds-uid"}]}, revision: 1},
    {metadata: {name: "mount-utilities-newhash", labels: {"controller-revision-hash": "newhash"}, ownerReferences: [{kind: "DaemonSet", uid: "ds-uid"}]}, revision: 2},
    {metadata: {name: "other-zzz", labels: {"controller-revision-hash": "zzz"}, ownerReferences: [{kind: "DaemonSet", uid: "other-uid"}]}, revision: 9}]}'
}
node_json() { # TAINTS VOLUMES-IN-USE VOLUMES-ATTACHED
  jq -n --argjson t "$1" --argjson u "$2" --argjson a "$3" '{apiVersion: "v1", kind: "Node",
    metadata: {name: "node-a"}, spec: {taints: $t}, status: {volumesInUse: $u, volumesAttached: $a}}'
}
mount_pod() { # NAME HASH IMAGE READY
  jq -n --arg n "$1" --arg h "$2" --arg i "$3" --arg r "$4" '{
    metadata: {name: $n, namespace: "kube-mount", uid: ("uid-" + $n),
      labels: {app: "mount-utilities", "controller-revision-hash": $h,
        "mount.kubernetes.io/local-volume": "true",
        "flexvolume.mount.kubernetes.io/nodeplug.io_2ffuse": "true",
        "mount.kubernetes.io/nfs": "false"},
      ownerReferences: [{kind: "DaemonSet", name: "mount-utilities", uid: "ds-uid", controller: true}]},
    spec: {nodeName: "node-a", tolerations: [{operator: "Exists"}], containers: [{name: "utilities", image: $i}]},
    status: {phase: "Running", conditions: [{type: "Ready", status: $r}]}}'
}
consumer() { # NS/NAME VOLUMES TOLERATIONS [PHASE [NODE]]
  jq -n --arg ns "${1%/*}" --arg n "${1#*/}" --argjson v "$2" --argjson t "$3" --arg p "${4:-Running}" --arg node "${5:-node-a}" '{
    metadata: {name: $n, namespace: $ns, uid: ("uid-" + $n), labels: {app: $n}},
    spec: {nodeName: $node, volumes: $v, tolerations: $t, containers: [{name: "c", image: "busybox"}]},
    status: {phase: $p}}'
}
list() { jq -s '{items: .}'; }

FUSE_VOL='[{"name": "data", "flexVolume": {"driver": "nodeplug.io/fuse"}}]'
PVC_VOL='[{"name": "disk", "persistentVolumeClaim": {"claimName": "disk"}}]'
OTHER_VOL='[{"name": "cache", "emptyDir": {}}, {"name": "x", "flexVolume": {"driver": "other.io/x"}}, {"name": "tmp", "persistentVolumeClaim": {"claimName": "nfs-claim"}}]'
TOLERATE_ALL='[{"operator": "Exists"}]'
TOLERATE_KEY='[{"key": "nodeplug.io/mount-utilities-upgrade", "operator": "Exists", "effect": "NoExecute"}]'
TOLERATE_SOME='[{"operator": "Exists", "tolerationSeconds": 5}]'
OLD=mount-utilities-old01
NEW=mount-utilities-new01
TAINT_OLD="[{\"key\": \"nodeplug.io/mount-utilities-upgrade\", \"value\": \"${OLD}\", \"effect\": \"NoExecute\"}]"

# new_state NAME: a state directory with the DaemonSet, its revisions, an
# untainted node, the old mount pod (Ready) and, replacing it on delete, the
# new one (Ready at once); PVC default/disk bound to the local PV local-pv-1
# and default/nfs-claim to an NFS PV. Cases change the files.
new_state() {
  state=${tmp}/$1
  mkdir -p "${state}"
  ds_json OnDelete "${TOLERATE_ALL}" >"${state}/ds.json"
  revisions_json >"${state}/revisions.json"
  node_json '[]' '[]' '[]' >"${state}/node.json"
  mount_pod "${OLD}" oldhash docker.io/nodeplug/mount-utilities:1 True | list >"${state}/pods.json"
  mount_pod "${NEW}" newhash docker.io/nodeplug/mount-utilities:2 True >"${state}/newpod.json"
  jq -n '{items: [{metadata: {name: "disk", namespace: "default"}, spec: {volumeName: "local-pv-1"}},
    {metadata: {name: "nfs-claim", namespace: "default"}, spec: {volumeName: "nfs-pv"}}]}' >"${state}/pvcs.json"
  jq -n '{items: [{metadata: {name: "local-pv-1"}, spec: {local: {path: "/mnt/disks/1"}}},
    {metadata: {name: "nfs-pv"}, spec: {nfs: {server: "s", path: "/"}}}]}' >"${state}/pvs.json"
  : >"${state}/calls.log"
  : >"${state}/mutations.log"
}
# add_pods JSON...: appends pods to the state's pods.json.
add_pods() {
  local p
  for p in "$@"; do
    jq --argjson p "${p}" '.items += [$p]' "${state}/pods.json" >"${state}/pods.json.new"
    mv "${state}/pods.json.new" "${state}/pods.json"
  done
}

# run ARGS...: runs the script against the state; sets rc, out (stdout) and
# err (stderr).
run() {
  rc=0
  FAKE_STATE=${state} KUBECTL=${tmp}/bin/kubectl MU_POLL_INTERVAL=0.05 \
    "${script}" "$@" >"${state}/stdout" 2>"${state}/stderr" || rc=$?
  out=$(<"${state}/stdout")
  err=$(<"${state}/stderr")
  printf '$ %s\n%s\n%s\nexit %s\n\n' "$*" "${out}" "${err}" "${rc}" >>"${state}/runs.log"
}
mutations() { sed -e 's/ --timeout=[0-9]*s//' "${state}/mutations.log"; }
taints() { jq -c '[.spec.taints[]? | "\(.key)=\(.value // ""):\(.effect)"]' "${state}/node.json"; }
pod_names() { jq -r '[.items[].metadata.name] | join(" ")' "${state}/pods.json"; }
expect_rc() { ((rc == $1)) || fail "exit ${rc}, want $1"$'\n'"${out}"$'\n'"${err}"; }
expect_out() { grep -qF -- "$1" <<<"${out}"$'\n'"${err}" || fail "output does not contain: $1"$'\n'"${out}"$'\n'"${err}"; }
expect_mutations() {
  local got want
  got=$(mutations)
  want=$(printf '%s\n' "$@")
  [[ $# -gt 0 ]] || want=""
  [[ ${got} == "${want}" ]] || fail "mutating calls:"$'\n'"${got}"$'\n'"want:"$'\n'"${want}"
}
TAINT_ADD="taint nodes node-a nodeplug.io/mount-utilities-upgrade=${OLD}:NoExecute --overwrite"
TAINT_DEL="taint nodes node-a nodeplug.io/mount-utilities-upgrade:NoExecute-"
DELETE_OLD="delete pod ${OLD} -n kube-mount --ignore-not-found --wait=true"

# --- decisions ---------------------------------------------------------------

case_start "already up to date: no changes"
new_state uptodate
mount_pod "${NEW}" newhash docker.io/nodeplug/mount-utilities:2 True | list >"${state}/pods.json"
add_pods "$(consumer default/fuse-user "${FUSE_VOL}" '[]')"
# A pod with the DaemonSet's labels that it does not own, and one it owns
# without a revision label, being deleted: neither is the node's mount pod.
add_pods "$(mount_pod stray oldhash x False | jq '.metadata.ownerReferences = []')" \
  "$(mount_pod going oldhash x False | jq '.metadata.labels |= del(.["controller-revision-hash"]) | .metadata.deletionTimestamp = "2026-01-01T00:00:00Z"')"
run node-a
expect_rc 0
expect_mutations
expect_out "[node-a] up to date: ${NEW} runs revision newhash and is Ready"
grep -qE '^\[node-a\] check: [0-9]+\.[0-9] s$' <<<"${out}" || fail "no check timing line"$'\n'"${out}"
run node-a --dry-run
expect_rc 0
expect_mutations

case_start "current pod not Ready yet: wait for it, change nothing"
new_state starting
mount_pod "${NEW}" newhash docker.io/nodeplug/mount-utilities:2 False | list >"${state}/pods.json"
echo 3 >"${state}/ready_countdown"
run node-a
expect_rc 0
expect_mutations
expect_out "[node-a] new pod ${NEW} is Ready, image docker.io/nodeplug/mount-utilities:2"

case_start "in use by a pod that tolerates the taint: refuse before tainting"
new_state refuse-early
add_pods "$(consumer default/tolerant "${FUSE_VOL}" "${TOLERATE_KEY}")" "$(consumer default/evictable "${PVC_VOL}" '[]')"
run node-a
expect_rc 3
expect_mutations
expect_out "never delete a mount pod while a volume it serves is mounted: a FUSE daemon dies with its pod"
expect_out "pod default/tolerant: volume data of nodeplug.io/fuse (tolerates the taint: not evicted)"
grep -q evictable <<<"${err}" && fail "the refusal names a pod that would be evicted"
expect_eq "taints" "$(taints)" "[]"
jq -e --arg n "${OLD}" 'any(.items[]; .metadata.name == $n)' "${state}/pods.json" >/dev/null || fail "the old pod was deleted"

case_start "in use by a tolerating pod that comes after the taint: refuse, untaint, keep the pod"
new_state refuse-late
add_pods "$(consumer default/fuse-user "${FUSE_VOL}" '[]')"
echo 1 >"${state}/evict_after"
printf '.items |= map(select(.metadata.name != "fuse-user")) | .items += [%s]' \
  "$(consumer default/late "${PVC_VOL}" "${TOLERATE_ALL}")" >"${state}/evict-pods.jq"
run node-a
expect_rc 3
expect_mutations "${TAINT_ADD}" "${TAINT_DEL}"
expect_out "pod default/late: volume disk (claim disk, PV local-pv-1) of kubernetes.io/local-volume (tolerates the taint: not evicted)"
expect_out "removed the taint nodeplug.io/mount-utilities-upgrade:NoExecute; ${OLD} still runs"
expect_eq "taints" "$(taints)" "[]"
jq -e --arg n "${OLD}" 'any(.items[]; .metadata.name == $n)' "${state}/pods.json" >/dev/null || fail "the old pod was deleted"

case_start "happy path: taint, drain, delete, wait for Ready, untaint"
new_state happy
node_json '[]' '["kubernetes.io/local-volume/local-pv-1", "kubernetes.io/csi/other^v"]' \
  '[{"name": "kubernetes.io/csi/other^v", "devicePath": ""}]' >"${state}/node.json"
add_pods "$(consumer default/fuse-user "${FUSE_VOL}" '[]')" \
  "$(consumer default/local-user "${PVC_VOL}" "${TOLERATE_SOME}")" \
  "$(consumer default/unrelated "${OTHER_VOL}" "${TOLERATE_ALL}")" \
  "$(consumer default/finished "${FUSE_VOL}" "${TOLERATE_ALL}" Succeeded)" \
  "$(consumer default/elsewhere "${FUSE_VOL}" "${TOLERATE_ALL}" Running node-b)" \
  "$(consumer kube-mount/helper "${FUSE_VOL}" "${TOLERATE_ALL}")"
echo 3 >"${state}/evict_after"
echo '.items |= map(select(.metadata.name != "fuse-user" and .metadata.name != "local-user"))' >"${state}/evict-pods.jq"
echo '.status.volumesInUse = ["kubernetes.io/csi/other^v"]' >"${state}/evict-node.jq"
jq '.status.conditions = [{type: "Ready", status: "False"}]' "${state}/newpod.json" >"${state}/newpod.json.new"
mv "${state}/newpod.json.new" "${state}/newpod.json"
echo 3 >"${state}/ready_after"
run node-a
expect_rc 0
expect_mutations "${TAINT_ADD}" "${DELETE_OLD}" "${TAINT_DEL}"
expect_out "[node-a] pod ${OLD} runs revision oldhash; the DaemonSet's is newhash"
expect_out "[node-a] pod ${OLD} serves: kubernetes.io/local-volume nodeplug.io/fuse"
expect_out "  pod default/fuse-user: volume data of nodeplug.io/fuse"
expect_out "  pod default/local-user: volume disk (claim disk, PV local-pv-1) of kubernetes.io/local-volume"
expect_out "  node node-a: kubernetes.io/local-volume/local-pv-1 in use (status.volumesInUse)"
expect_out "[node-a] new pod ${NEW} is Ready, image docker.io/nodeplug/mount-utilities:2"
expect_out "[node-a] upgraded ${OLD} -> ${NEW} (docker.io/nodeplug/mount-utilities:2): "
for w in unrelated finished elsewhere helper other^v; do
  grep -qF -- "${w}" <<<"${out}" && fail "the output names ${w}, which does not hold a served volume"
done
for step in check taint drain delete ready untaint; do
  grep -qE "^\[node-a\] ${step}: [0-9]+\.[0-9] s$" <<<"${out}" || fail "no timing line for ${step}"
done
grep -qE "^  \[node-a\] upgraded .* s \(check [0-9.]+ s, taint [0-9.]+ s, drain [0-9.]+ s, delete [0-9.]+ s, ready [0-9.]+ s, untaint [0-9.]+ s\)$" <<<"${out}" ||
  fail "no summary line with every step"$'\n'"${out}"
# The script waited for Ready between the delete and the untaint.
awk '/^delete pod/ { d = 1 } d && /^get pods -n kube-mount/ { g++ } /^taint .*-$/ { exit !(d && g >= 3) }' "${state}/calls.log" ||
  fail "no wait for the new pod between delete and untaint"
expect_eq "taints" "$(taints)" "[]"
jq -e --arg n "${OLD}" 'any(.items[]; .metadata.name == $n) | not' "${state}/pods.json" >/dev/null || fail "the old pod is still there"
run node-a
expect_rc 0
expect_mutations "${TAINT_ADD}" "${DELETE_OLD}" "${TAINT_DEL}"
expect_out "[node-a] up to date"

case_start "dry run: no mutating calls"
new_state dry
node_json '[]' '["kubernetes.io/local-volume/local-pv-1"]' '[]' >"${state}/node.json"
add_pods "$(consumer default/fuse-user "${FUSE_VOL}" '[]')"
run --dry-run node-a
expect_rc 0
expect_mutations
expect_out "dry run: would taint nodeplug.io/mount-utilities-upgrade=${OLD}:NoExecute"
expect_out "  pod default/fuse-user: volume data of nodeplug.io/fuse"
expect_out "dry run: would delete pod kube-mount/${OLD} (revision oldhash -> newhash)"
expect_out "dry run: would remove the taint"
add_pods "$(consumer default/tolerant "${FUSE_VOL}" "${TOLERATE_ALL}")"
run --dry-run node-a
expect_rc 3
expect_mutations
expect_out "nothing was changed"

case_start "resumed after an interruption: taint present, old pod gone, new pod Ready: untaint only"
new_state resumed
node_json "${TAINT_OLD}" '[]' '[]' >"${state}/node.json"
mount_pod "${NEW}" newhash docker.io/nodeplug/mount-utilities:2 True | list >"${state}/pods.json"
run node-a
expect_rc 0
expect_mutations "${TAINT_DEL}"
expect_out "resuming: the node is tainted nodeplug.io/mount-utilities-upgrade=${OLD}:NoExecute and that pod is gone"
expect_eq "taints" "$(taints)" "[]"

case_start "resumed after an interruption in the drain: delete and untaint, no second taint"
new_state resumed-drain
node_json "${TAINT_OLD}" '[]' '[]' >"${state}/node.json"
run node-a
expect_rc 0
expect_mutations "${DELETE_OLD}" "${TAINT_DEL}"
expect_out "already tainted"

case_start "new pod not Ready in time: exit 4, taint kept; the next run finishes"
new_state not-ready
jq '.status.conditions = [{type: "Ready", status: "False"}]' "${state}/newpod.json" >"${state}/newpod.json.new"
mv "${state}/newpod.json.new" "${state}/newpod.json"
run --timeout 1 node-a
expect_rc 4
expect_mutations "${TAINT_ADD}" "${DELETE_OLD}"
expect_out "the node stays tainted"
expect_eq "taints" "$(taints)" "[\"nodeplug.io/mount-utilities-upgrade=${OLD}:NoExecute\"]"
jq '(.items[] | .status.conditions) = [{type: "Ready", status: "True"}]' "${state}/pods.json" >"${state}/pods.json.new"
mv "${state}/pods.json.new" "${state}/pods.json"
: >"${state}/mutations.log"
run node-a
expect_rc 0
expect_mutations "${TAINT_DEL}"

case_start "drain timeout: name what is in use, untaint, exit 4"
new_state timeout
node_json '[]' '[]' '[{"name": "flexvolume-nodeplug.io/fuse/vol-1", "devicePath": "/dev/x"}]' >"${state}/node.json"
add_pods "$(consumer default/stuck "${FUSE_VOL}" "${TOLERATE_SOME}")"
run --timeout 1 node-a
expect_rc 4
expect_mutations "${TAINT_ADD}" "${TAINT_DEL}"
expect_out "timed out after 1 s; still in use:"
expect_out "  pod default/stuck: volume data of nodeplug.io/fuse"
expect_out "  node node-a: flexvolume-nodeplug.io/fuse/vol-1 attached (status.volumesAttached)"
expect_eq "taints" "$(taints)" "[]"

FUSE_OWN='36 30 0:50 / /var/lib/kubelet/pods/u1/volumes/nodeplug.io~fuse/data rw shared:1 - fuse.nodeplug nodeplug-fuse rw'
FUSE_HOST='37 30 0:60 / /var/lib/kubelet/pods/u2/volumes/kubernetes.io~csi/pv-s3/mount rw shared:1 - fuse.s3fs s3fs rw'
FUSE_FD_OWN='/proc/7/fd/5 50'

case_start "a FUSE mount the old pod still serves: the delete waits for its unmount"
new_state fuse-mount
echo "${FUSE_OWN}" >"${state}/mountinfo"
echo "${FUSE_FD_OWN}" >"${state}/fuse-fds"
echo 3 >"${state}/unmount_countdown"
run node-a
expect_rc 0
expect_mutations "${TAINT_ADD}" "${DELETE_OLD}" "${TAINT_DEL}"
expect_out "  pod kube-mount/${OLD}: FUSE mount /var/lib/kubelet/pods/u1/volumes/nodeplug.io~fuse/data (its daemon runs in that pod)"
[[ ! -f ${state}/mountinfo ]] || fail "deleted the old pod before its FUSE mount went"
grep -qxF -- "exec -n kube-mount ${OLD} -c utilities -- sh -c cat /proc/self/mountinfo || exit 1" "${state}/calls.log" ||
  fail "the mount table is not read by the probe in container utilities:"$'\n'"$(grep -m 1 '^exec' "${state}/calls.log")"

case_start "FUSE mounts that propagated in from the host are not waited for"
new_state fuse-host
echo "${FUSE_HOST}" >"${state}/mountinfo-host"
# The probe runs in the container the kubelet uses.
jq '.items[0].metadata.annotations = {"mount.kubernetes.io/container": "helper"}' "${state}/pods.json" >"${state}/pods.json.new"
mv "${state}/pods.json.new" "${state}/pods.json"
run --timeout 2 node-a
expect_rc 0
expect_mutations "${TAINT_ADD}" "${DELETE_OLD}" "${TAINT_DEL}"
expect_out "not waiting for these FUSE mounts: their daemon runs outside ${OLD}"
expect_out "  /var/lib/kubelet/pods/u2/volumes/kubernetes.io~csi/pv-s3/mount"
grep -q "^exec -n kube-mount ${OLD} -c helper -- sh -c" "${state}/calls.log" ||
  fail "the probe does not run in the container named by mount.kubernetes.io/container"
# With a mount of its own, and a descriptor that serves nothing yet: wait
# for its own mount only.
new_state fuse-host-and-own
echo "${FUSE_HOST}" >"${state}/mountinfo-host"
echo "${FUSE_OWN}" >"${state}/mountinfo"
printf '%s\n' "${FUSE_FD_OWN}" '/proc/9/fd/3 -' >"${state}/fuse-fds"
echo 3 >"${state}/unmount_countdown"
run --timeout 60 node-a
expect_rc 0
expect_mutations "${TAINT_ADD}" "${DELETE_OLD}" "${TAINT_DEL}"
expect_out "  pod kube-mount/${OLD}: FUSE mount /var/lib/kubelet/pods/u1/volumes/nodeplug.io~fuse/data (its daemon runs in that pod)"
[[ ! -f ${state}/mountinfo ]] || fail "deleted the old pod before its own FUSE mount went"
grep -F 'kubernetes.io~csi' <<<"${out}" | grep -q 'its daemon runs in that pod' && fail "waited for the host's FUSE mount"

case_start "a kernel that names no FUSE connection: wait for every FUSE mount, and say why"
new_state fuse-old-kernel
echo "${FUSE_HOST}" >"${state}/mountinfo-host"
echo '/proc/7/fd/5 -' >"${state}/fuse-fds"
run --timeout 1 node-a
expect_rc 4
expect_mutations "${TAINT_ADD}" "${TAINT_DEL}"
expect_out "the kernel does not say which FUSE connection a daemon of ${OLD} serves"
expect_out "  pod kube-mount/${OLD}: FUSE mount /var/lib/kubelet/pods/u2/volumes/kubernetes.io~csi/pv-s3/mount (its daemon runs in that pod)"

case_start "a descriptor's connection matches no FUSE mount: wait for every FUSE mount, and say why"
new_state fuse-stray-connection
echo "${FUSE_HOST}" >"${state}/mountinfo-host"
echo '/proc/7/fd/5 99' >"${state}/fuse-fds"
run --timeout 1 node-a
expect_rc 4
expect_mutations "${TAINT_ADD}" "${TAINT_DEL}"
expect_out "a /dev/fuse descriptor in ${OLD} serves connection 99, which no FUSE mount of its mount table has: waiting for every FUSE mount"

case_start "the old pod's mount table cannot be read: stop before tainting, exit 1"
while IFS='|' read -r what message; do
  new_state "unreadable-${what}"
  if [[ ${what} == empty ]]; then touch "${state}/exec_empty"; else echo "${message}" >"${state}/exec_fail"; fi
  for args in node-a "--dry-run node-a"; do
    # shellcheck disable=SC2086 # two words on purpose
    run ${args}
    expect_rc 1
    expect_mutations
    expect_out "cannot read the mount table of kube-mount/${OLD} (container utilities): ${message}"
    expect_out "stopped: without the mount table of ${OLD} the script cannot tell whether a FUSE daemon in it still serves a volume"
    expect_out "nothing was changed"
  done
done <<'CASES'
forbidden|Error from server (Forbidden): pods "mount-utilities-old01" is forbidden: User "ops" cannot create resource "pods/exec" in API group "" in the namespace "kube-mount"
no-shell|error: Internal error occurred: error executing command in container: exec: "sh": executable file not found in $PATH
empty|no mount table in the output
CASES

case_start "the mount table cannot be read during the drain: stop, untaint, keep the pod"
new_state unreadable-drain
echo "${FUSE_OWN}" >"${state}/mountinfo"
echo "${FUSE_FD_OWN}" >"${state}/fuse-fds"
echo 'error: unable to upgrade connection: container not found ("utilities")' >"${state}/exec_fail"
echo 2 >"${state}/exec_fail_countdown"
run node-a
expect_rc 1
expect_mutations "${TAINT_ADD}" "${TAINT_DEL}"
expect_out "cannot read the mount table of kube-mount/${OLD} (container utilities): error: unable to upgrade connection"
expect_out "removed the taint nodeplug.io/mount-utilities-upgrade:NoExecute; ${OLD} still runs"
expect_eq "taints" "$(taints)" "[]"
jq -e --arg n "${OLD}" 'any(.items[]; .metadata.name == $n)' "${state}/pods.json" >/dev/null || fail "the old pod was deleted"

case_start "preconditions: exit 2, no changes"
new_state precondition
ds_json RollingUpdate "${TOLERATE_ALL}" >"${state}/ds.json"
run node-a
expect_rc 2
expect_out "has updateStrategy RollingUpdate, not OnDelete"
ds_json OnDelete '[{"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute"}]' >"${state}/ds.json"
run node-a
expect_rc 2
expect_out "does not tolerate the taint nodeplug.io/mount-utilities-upgrade:NoExecute"
run --daemonset other node-a
expect_rc 2
expect_out 'daemonsets.apps "other" not found'
ds_json OnDelete "${TOLERATE_ALL}" >"${state}/ds.json"
run node-b
expect_rc 2
expect_out 'nodes "node-b" not found'
jq '.items = []' "${state}/pods.json" >"${state}/pods.json.new" && mv "${state}/pods.json.new" "${state}/pods.json"
run node-a
expect_rc 2
expect_out "no pod of kube-mount/mount-utilities on the node"
expect_mutations

cd "${NODEPLUG_ROOT}"
if ((failures > 0)); then
  np::die "mount-utilities-upgrade_test: ${failures} failures in ${n} cases"
fi
np::log "mount-utilities-upgrade_test: ${n} cases passed"
