# shellcheck shell=bash disable=SC2016,SC2034 # jq $names; variables read in the other files
# kubectl wrappers, jq and awk programs of hack/mount-utilities-upgrade.sh,
# and the probe it runs in the old mount pod. Sourced by
# hack/mount-utilities-upgrade.sh (not run).
# The programs below are single-quoted: their $names are jq's, awk's or the
# pod shell's.

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

mu::json_array() { jq -cn '$ARGS.positional' --args "$@"; }

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


# Run by sh in the old mount pod: its mount table, the line "#fuse-fds",
# then one line per /dev/fuse descriptor of the container's processes:
#   /proc/PID/fd/FD CONNECTION
# CONNECTION is the fdinfo's fuse_connection (the kernel's dev_t of the
# FUSE mount it serves), "-" when the fdinfo has none (a kernel before
# 6.16, or a descriptor not mounted yet). It exits non-zero if cat fails.
readonly MU_POD_FUSE_PROBE='cat /proc/self/mountinfo || exit 1
echo "#fuse-fds"
for f in /proc/[0-9]*/fd/*; do
  [ "$f" -ef /dev/fuse ] || continue
  c=-
  while read -r k v; do [ "$k" = fuse_connection: ] && c=$v; done <"${f%/fd/*}/fdinfo/${f##*/}"
  echo "$f $c"
done 2>/dev/null
exit 0'

# Reads MU_POD_FUSE_PROBE's output; for each FUSE mount (type fuse, fuse.*,
# fuseblk) writes "fuse<TAB>MOUNTPOINT" to the file tsv when a descriptor of
# the pod serves its connection (MAJOR:MINOR as the kernel's dev_t,
# MAJOR * 2^20 + MINOR), "MOUNTPOINT" to outside when none does. When it
# cannot tell, it counts every FUSE mount and writes why to unknown:
# "kernel" (the pod holds /dev/fuse but no fdinfo names a connection) or
# "connection N" (a descriptor serves a connection that no FUSE mount of
# the table has, so the numbers cannot be trusted to match).
readonly MU_AWK_POD_FUSE='
$0 == "#fuse-fds" { fds = 1; next }
fds { nfd++; if ($2 == "-") next; named = 1; served[$2] = 1; next }
{
  for (i = 7; i <= NF; i++) if ($i == "-") {
    if ($(i + 1) ~ /^fuse/) { split($3, d, ":"); n++; dev[n] = (d[1] * 1048576 + d[2]) ""; mp[n] = $5; isdev[dev[n]] = 1 }
    break
  }
}
END {
  printf "" >outside; printf "" >unknown
  why = ""
  if (nfd > 0 && !named) why = "kernel"
  for (c in served) if (!(c in isdev)) why = "connection " c
  for (k = 1; k <= n; k++) {
    if (dev[k] in served || why != "") printf "fuse\t%s\n", mp[k] >>tsv
    else print mp[k] >>outside
  }
  if (why != "" && n > 0) print why >unknown
}'
