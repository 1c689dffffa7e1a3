#!/usr/bin/env bash
# Tests np::preflight::local_up_dir (hack/lib/preflight.sh), the check that
# LOCAL_UP_DIR and every directory above it, on the way through symlinks
# too, are root's and not writable by group or others, on real directories
# made under a root-owned mktemp -d in /var/lib; and that local-up refuses
# such a directory before it creates anything. Needs root (chown); fails
# without it under CI=true, else skips.
set -o errexit -o nounset -o pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/init.sh"
source "${NODEPLUG_ROOT}/hack/lib/preflight.sh"

fail() { np::die "local-up-dir_test: $1" "${2:-np::preflight::local_up_dir in hack/lib/preflight.sh}"; }
if [[ ${EUID} -ne 0 ]]; then
  [[ "${CI:-}" != true ]] || fail "needs root (chown)" "run it as root, as CI does"
  np::warn "local-up-dir_test: skipped, needs root (chown)"
  exit 0
fi

BASE=$(mktemp -d /var/lib/np-local-up-dir-test.XXXXXX)
trap 'rm -rf "${BASE}"' EXIT
# mkdir_mode MODE OWNER DIR: DIR with that mode and owner.
mkdir_mode() {
  mkdir -p "$3"
  chmod "$1" "$3"
  chown "$2" "$3"
}
mkdir_mode 0755 root "${BASE}/ok"
mkdir_mode 0700 root "${BASE}/ok/local-up"
mkdir_mode 0755 65534 "${BASE}/nobody"
mkdir_mode 0700 65534 "${BASE}/ok/nobodys-up"
mkdir_mode 0775 root "${BASE}/group-writable"
mkdir_mode 0757 root "${BASE}/world-writable"
mkdir_mode 1777 root "${BASE}/sticky"
mkdir_mode 0757 root "${BASE}/ok/with space"
mkdir_mode 0777 root "${BASE}/writable-target"
mkdir_mode 0755 root "${BASE}/writable-target/up"
ln -s "${BASE}/writable-target/up" "${BASE}/ok/link-abs"
ln -s ../sticky "${BASE}/ok/link-rel"
ln -s "${BASE}/ok" "${BASE}/ok/link-ok"
# A symlink whose target path goes through a second symlink kept in a
# writable directory: neither the given path nor the resolved one names it.
mkdir_mode 0777 root "${BASE}/writable-links"
ln -s "${BASE}/ok" "${BASE}/writable-links/to-ok"
ln -s "${BASE}/writable-links/to-ok/local-up" "${BASE}/ok/link-via"
touch "${BASE}/ok/file"

# Each case: NAME, LOCAL_UP_DIR, the directory the error must name (empty:
# accepted), a text the hint must have.
cases=(
  "ok root 0755 chain|${BASE}/ok/local-up||"
  "nonexistent trailing components under a good parent|${BASE}/ok/a/b/c||"
  "symlink into a root-only dir|${BASE}/ok/link-ok/up||"
  "dir owned by another uid|${BASE}/ok/nobodys-up|${BASE}/ok/nobodys-up|chown root:root ${BASE}/ok/nobodys-up"
  "parent owned by another uid|${BASE}/nobody/up|${BASE}/nobody|(uid 65534)"
  "group-writable dir|${BASE}/group-writable|${BASE}/group-writable|chmod go-w ${BASE}/group-writable"
  "world-writable parent|${BASE}/world-writable/up|${BASE}/world-writable|mode 757"
  "sticky tmp-like parent|${BASE}/sticky/up|${BASE}/sticky|put the cluster outside it"
  "symlink into a writable dir|${BASE}/ok/link-abs/local-up|${BASE}/writable-target|mode 777"
  "relative symlink to a sticky dir|${BASE}/ok/link-rel/up|${BASE}/sticky|mode 1777"
  "symlink via a symlink in a writable dir|${BASE}/ok/link-via|${BASE}/writable-links|mode 777"
  "file in the way|${BASE}/ok/file/up|${BASE}/ok/file|is not a directory"
  "relative path|relative/up|relative/up|not an absolute path"
  "a space in the name|${BASE}/ok/with space/up|${BASE}/ok/with space|chmod go-w ${BASE}/ok/with space"
  "dot-dot out of a symlink|${BASE}/ok/link-abs/../up|${BASE}/writable-target|mode 777"
)

for c in "${cases[@]}"; do
  IFS='|' read -r name dir names hint <<<"${c}"
  rc=0
  out=$( (np::preflight::local_up_dir "${dir}") 2>&1) || rc=$?
  if [[ -z "${names}" ]]; then
    ((rc == 0)) || fail "${name}: ${dir} refused (exit ${rc})" "${out}"
    [[ -z "${out}" ]] || fail "${name}: ${dir} accepted, but with output" "${out}"
    continue
  fi
  ((rc == 1)) || fail "${name}: ${dir} not refused (exit ${rc})"
  [[ "${out}" == *"ERROR: "*"${names} is "* ]] || fail "${name}: the error does not name ${names}" "${out}"
  [[ "${out}" == *"${hint}"* ]] || fail "${name}: no \"${hint}\" in the error" "${out}"
done

# local-up itself refuses before it creates anything: not even OUT_DIR.
# Should it not, it would stop anyway at the missing containerd
# (SKIP_BUILD=1 and an empty CONTAINERD_BIN_DIR), before starting anything.
rc=0
out=$(OUT_DIR="${BASE}/ok/out" LOCAL_UP_DIR="${BASE}/sticky/up" NODES=1 SKIP_BUILD=1 \
  CONTAINERD_BIN_DIR="${BASE}/ok/no-containerd" DEFAULT_STORAGECLASS=false \
  "${NODEPLUG_ROOT}/hack/local-up-cluster.sh" 2>&1) || rc=$?
((rc == 1)) || fail "local-up: exit ${rc} for an unsafe LOCAL_UP_DIR" "${out}"
[[ "${out}" == *"ERROR: the cluster directory ${BASE}/sticky/up is not root's alone: ${BASE}/sticky "* ]] ||
  fail "local-up: did not refuse the unsafe LOCAL_UP_DIR" "${out}"
[[ ! -e "${BASE}/ok/out" && ! -e "${BASE}/sticky/up" ]] || fail "local-up: created a directory before refusing"
np::log "local-up-dir_test: ${#cases[@]} cases and local-up's refusal passed"
