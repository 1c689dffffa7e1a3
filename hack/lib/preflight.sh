#!/usr/bin/env bash
# Checks and installs what the local cluster needs before anything starts.

# containerd is not among them: Debian 12's 1.6 is older than Kubernetes
# v1.37 supports, so hack/build.sh builds 2.x (hack/tools/containerd).
# e2fsprogs, util-linux and mount also provide the host tools copied into the
# mount-utilities image (build/mount-utilities/host-binaries); they and
# iproute2, socat, curl and netcat-openbsd go into upstream's agnhost image
# (build/e2e-images/agnhost/host-packages). jq and binutils (readelf) are
# for make release and its check, which verify runs (hack/release_test.sh).
# xfsprogs and btrfs-progs make the file systems pkg/localpv/identity's
# tests read UUIDs from.
APT_PACKAGES=(runc busybox-static openssl socat conntrack iptables ethtool iproute2
  containernetworking-plugins e2fsprogs util-linux mount curl netcat-openbsd openssh-server openssh-client sudo
  binutils jq xfsprogs btrfs-progs)

np::preflight::root() {
  [[ ${EUID} -eq 0 ]] || np::die "the local cluster needs root (mounts, cgroups, containerd)" "run it with sudo"
}

np::preflight::apt() {
  local missing=() p
  for p in "${APT_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "${p}" 2>/dev/null | grep -q "install ok installed" || missing+=("${p}")
  done
  ((${#missing[@]} == 0)) && return 0
  np::log "installing apt packages: ${missing[*]}"
  command -v apt-get >/dev/null || np::die "apt-get is not available to install: ${missing[*]}" \
    "install these packages with your package manager"
  apt-get update -qq >"${OUT_DIR}/apt.log" 2>&1 ||
    np::die "apt-get update failed (see ${OUT_DIR}/apt.log)" "check that Debian's mirror is reachable"
  # No service a package ships is started on the host (openssh-server's
  # sshd would listen on every address): a policy-rc.d that denies every
  # start, for the install only, unless the host has one of its own.
  local policy=/usr/sbin/policy-rc.d ours=false rc=0
  if [[ ! -e "${policy}" ]]; then
    printf '#!/bin/sh\nexit 101\n' >"${policy}" && chmod 755 "${policy}" && ours=true
  fi
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >>"${OUT_DIR}/apt.log" 2>&1 || rc=$?
  [[ "${ours}" == false ]] || rm -f "${policy}"
  ((rc == 0)) || np::die "apt-get install failed for: ${missing[*]} (see ${OUT_DIR}/apt.log)" \
    "run: apt-get install ${missing[*]}"
}

# np::preflight::load_fuse makes sure /dev/fuse exists, loading the fuse
# module if needed. The mount-utilities pod's FUSE daemon mounts through it
# with mount(2), so no fuse3/fusermount package is needed.
np::preflight::load_fuse() {
  [[ -c /dev/fuse ]] && return 0
  if command -v modprobe >/dev/null; then
    modprobe fuse >/dev/null 2>&1 || true
  fi
  [[ -c /dev/fuse ]]
}

np::preflight::fuse() {
  np::preflight::load_fuse || np::die "/dev/fuse is missing and 'modprobe fuse' did not create it" \
    "load the fuse kernel module (modprobe fuse); in a container, pass the host's /dev/fuse in"
}

# np::preflight::port_holder PORT prints the process listening on TCP
# PORT (ss's users:((...)) field), or nothing.
np::preflight::port_holder() {
  ss -Htlnp "sport = :$1" 2>/dev/null | grep -o 'users:(([^)]*))' | head -n1 || true
}

# np::preflight::ports fails if a port the cluster needs is taken, naming
# the process that holds it.
np::preflight::ports() {
  local port holder
  for port in "${CLUSTER_PORTS[@]}"; do
    holder=$(np::preflight::port_holder "${port}")
    if [[ -n "${holder}" ]]; then
      np::die "port ${port} is already in use by ${holder}" \
        "stop that process, or if it is a previous local cluster run 'make local-down'"
    fi
  done
}

# np::preflight::stale refuses to start over a running cluster and cleans
# up after a dead one.
np::preflight::stale() {
  local pidfile running=()
  for pidfile in "${LOCAL_UP_DIR}"/pids/*; do
    [[ -f "${pidfile}" ]] || continue
    if np::cluster::alive "$(basename "${pidfile}")"; then
      running+=("$(basename "${pidfile}")")
    fi
  done
  if ((${#running[@]} > 0)); then
    np::die "a local cluster is already running (${running[*]})" "run 'make local-down' first"
  fi
  if [[ -d "${LOCAL_UP_DIR}" ]]; then
    np::log "cleaning up state left by a previous local cluster"
    "${NODEPLUG_ROOT}/hack/local-down.sh" >/dev/null 2>&1 ||
      np::die "could not clean up the previous cluster's state in ${LOCAL_UP_DIR}" "run 'make local-down' and read its errors"
  fi
}

# The local cluster's directory (LOCAL_UP_DIR) holds root's SSH keys (the
# sshds let that key in as root), the cluster's CA and the configurations
# that root's services read. Whoever can write it, or any directory above
# it, can swap one of those, so it must be root's all the way up.
NP_SAFE_DIR_EXAMPLE=/var/lib/nodeplug/local-up

# np::preflight::unsafe_dir PATH: walks PATH from / as the kernel resolves
# it, into every symlink's target, and prints "UID USER MODE DIR" for the
# first existing directory on the way that is not root's or that group or
# others may write (sticky ones such as /tmp included), "- - notdir DIR"
# for something that is not a directory; nothing if all are root's. What
# does not exist yet is fine: root creates it.
np::preflight::unsafe_dir() {
  local todo=$1 at=/ comp next hops=0
  np::preflight::root_dir / || return 0
  while [[ -n "${todo}" ]]; do
    todo=${todo#/}
    comp=${todo%%/*}
    todo=${todo#"${comp}"}
    case "${comp}" in
    '' | .) continue ;;
    ..) at=$(dirname "${at}") && continue ;;
    esac
    next=${at%/}/${comp}
    if [[ -L "${next}" ]]; then
      ((++hops <= 40)) || { echo "- - symlink-loop ${next}" && return 0; }
      comp=$(readlink -- "${next}")
      [[ "${comp}" != /* ]] || at=/
      todo=${comp}${todo}
      continue
    fi
    [[ -e "${next}" ]] || return 0
    np::preflight::root_dir "${next}" || return 0
    at=${next}
  done
}

# np::preflight::root_dir DIR: true if DIR is a directory owned by root
# that neither group nor others may write; else prints why, as
# np::preflight::unsafe_dir does.
np::preflight::root_dir() {
  local uid user mode
  [[ -d "$1" ]] || { echo "- - notdir $1" && return 1; }
  read -r uid user mode < <(stat -c '%u %U %a' -- "$1")
  ((uid == 0 && (8#${mode} & 8#022) == 0)) && return 0
  echo "${uid} ${user} ${mode} $1"
  return 1
}

# np::preflight::local_up_dir DIR: refuses a cluster directory (local-up's
# LOCAL_UP_DIR) that is relative or that anyone but root could change, or
# that has such a directory above it or on a symlink's way; it names the
# directory, its owner and mode, and the fix. Run before anything is
# created in it.
np::preflight::local_up_dir() {
  local dir=$1 bad path uid user mode fix
  [[ "${dir}" == /* ]] || np::die "LOCAL_UP_DIR=${dir} is not an absolute path" \
    "use an absolute path, e.g. LOCAL_UP_DIR=${NP_SAFE_DIR_EXAMPLE}"
  bad=$(np::preflight::unsafe_dir "${dir}")
  [[ -n "${bad}" ]] || return 0
  read -r uid user mode path <<<"${bad}"
  fix="or put the cluster in a directory of root's: LOCAL_UP_DIR=${NP_SAFE_DIR_EXAMPLE}"
  case "${mode}" in
  notdir) np::die "the cluster directory ${dir} cannot be made: ${path} is not a directory" "choose another LOCAL_UP_DIR, e.g. LOCAL_UP_DIR=${NP_SAFE_DIR_EXAMPLE}" ;;
  symlink-loop) np::die "the cluster directory ${dir} cannot be made: too many symlinks at ${path}" "fix the symlinks, ${fix}" ;;
  esac
  if (((8#${mode} & 8#1000) != 0)); then
    fix="${path} is a shared directory (sticky and writable by others, as /tmp is): put the cluster outside it, e.g. LOCAL_UP_DIR=${NP_SAFE_DIR_EXAMPLE}"
  else
    fix="chown root:root ${path} && chmod go-w ${path}, ${fix}"
  fi
  np::die "the cluster directory ${dir} is not root's alone: ${path} is owned by ${user} (uid ${uid}) with mode ${mode}; local-up keeps root's SSH keys and the cluster's CA there, so it and every directory above it must be owned by root and not writable by group or others" \
    "${fix}"
}
