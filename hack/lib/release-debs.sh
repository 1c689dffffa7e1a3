#!/usr/bin/env bash
# make release's files of another architecture than the host's, taken from
# Debian's packages of that architecture: busybox-static for the
# local-volume-provisioner image, and the mount-utilities image's tools
# (build/mount-utilities/host-binaries) with their shared libraries. The
# packages are downloaded with an apt state of their own under the release's
# work directory (a copy of the host's Debian sources, APT::Architecture set
# to the target): the host's dpkg architectures and package lists are left
# alone. Nothing here runs a binary of the target architecture; shared
# libraries are found from the ELF NEEDED entries (readelf), not from ldd.
# Sourced by hack/lib/release.sh.

# np::release::triplet ARCH: the Debian multiarch triplet of ARCH
# (the directory its libraries live in).
np::release::triplet() {
  case "$1" in
  amd64) echo x86_64-linux-gnu ;;
  arm64) echo aarch64-linux-gnu ;;
  *) np::die "no multiarch triplet for architecture '$1'" "release for amd64 or arm64" ;;
  esac
}

# np::release::elf_machine ARCH: the Machine readelf -h prints for ARCH.
np::release::elf_machine() {
  case "$1" in
  amd64) echo "Advanced Micro Devices X86-64" ;;
  arm64) echo AArch64 ;;
  *) np::die "no ELF machine for architecture '$1'" "release for amd64 or arm64" ;;
  esac
}

# np::release::apt TOOL ARCH WORK ARGS...: TOOL (apt-get or apt-cache) -qq
# ARGS with the apt state of ARCH in WORK/apt-ARCH, made and updated on
# first use.
np::release::apt() {
  local tool=$1 arch=$2 work=$3 d opts
  shift 3
  d=${work}/apt-${arch}
  opts=(-o "APT::Architecture=${arch}" -o "APT::Architectures::=${arch}" -o "Dir::State::Lists=${d}/lists"
    -o "Dir::Cache=${d}/cache" -o "Dir::State::status=${d}/status" -o Dir::Etc::SourceList=/dev/null
    -o "Dir::Etc::SourceParts=${d}/sources" -o APT::Sandbox::User=root)
  if [[ ! -f "${d}/updated" ]]; then
    rm -rf "${d}" && mkdir -p "${d}/lists/partial" "${d}/cache/archives/partial" "${d}/sources" "${d}/deb"
    cp /etc/apt/sources.list.d/debian.sources "${d}/sources/" 2>/dev/null ||
      np::die "no /etc/apt/sources.list.d/debian.sources to download ${arch} packages from" "run on Debian 12 with its default apt sources"
    : >"${d}/status"
    apt-get -qq "${opts[@]}" update >&2 ||
      np::die "apt-get update for ${arch} failed" "check that the Debian mirror in /etc/apt/sources.list.d/debian.sources is reachable"
    touch "${d}/updated"
  fi
  "${tool}" -qq "${opts[@]}" "$@"
}

# np::release::arch_version PACKAGE VERSION: the version of PACKAGE, among
# those apt-cache madison lists on stdin, built from the same source as the
# host's VERSION: VERSION itself, or the one that differs only in its
# binNMU suffix (+bN, a rebuild of one architecture).
np::release::arch_version() {
  local pkg=$1 version=$2 v versions
  versions=$(awk -F '|' -v p="${pkg}" '{gsub(/ /, "")} $1 == p {print $2}')
  for v in ${versions}; do
    [[ "${v}" == "${version}" ]] && { echo "${v}"; return; }
  done
  for v in ${versions}; do
    [[ "${v%+b[0-9]*}" == "${version%+b[0-9]*}" ]] && { echo "${v}"; return; }
  done
  versions=${versions//$'\n'/ }
  np::die "the Debian mirror has no ${pkg} of the host's version ${version} (it has: ${versions:-none})" \
    "apt-get upgrade the host (its installed versions must still be on the mirror)"
}

# np::release::download ARCH WORK PACKAGE=VERSION...: the .deb files of the
# PACKAGEs for ARCH (np::release::arch_version of each VERSION), one path
# per line, downloaded into WORK/apt-ARCH/deb.
np::release::download() {
  local arch=$1 work=$2 p v madison pkgs=() files=() started=${SECONDS}
  shift 2
  madison=$(np::release::apt apt-cache "${arch}" "${work}" madison "${@%%=*}") ||
    np::die "apt-cache madison ${*%%=*} for ${arch} failed"
  for p in "$@"; do
    v=$(np::release::arch_version "${p%%=*}" "${p#*=}" <<<"${madison}") || exit 1
    pkgs+=("${p%%=*}:${arch}=${v}")
    # apt writes the epoch's colon as %3a.
    files+=("${work}/apt-${arch}/deb/${p%%=*}_${v//:/%3a}")
  done
  (mkdir -p "${work}/apt-${arch}/deb" && cd "${work}/apt-${arch}/deb" &&
    np::release::apt apt-get "${arch}" "${work}" download "${pkgs[@]}" >&2) ||
    np::die "downloading ${pkgs[*]} failed" "check that the Debian mirror in /etc/apt/sources.list.d/debian.sources is reachable"
  for p in "${files[@]}"; do
    if [[ -f "${p}_${arch}.deb" ]]; then echo "${p}_${arch}.deb"; elif [[ -f "${p}_all.deb" ]]; then echo "${p}_all.deb"; else
      np::die "apt-get download left no ${p}_${arch}.deb"
    fi
  done
  np::log "${arch}: $# packages downloaded in $((SECONDS - started)) s"
}

# np::release::host_package PATH: "PACKAGE=VERSION" of the host's Debian
# package that holds PATH (also found under the other side of merged /usr:
# /usr/sbin/fsck is util-linux's /sbin/fsck).
np::release::host_package() {
  local path=$1 alt pkg
  [[ "${path}" == /usr/* ]] && alt=${path#/usr} || alt=/usr${path}
  pkg=$( (dpkg -S "${path}" || dpkg -S "${alt}") 2>/dev/null | grep -v '^diversion' | sed -n '1s/:.*//p')
  [[ -n "${pkg}" ]] || np::die "no Debian package on this host holds ${path}" "run hack/install-deps.sh as root"
  echo "${pkg}=$(dpkg-query -W -f '${Version}' "${pkg}")"
}

# np::release::busybox ARCH WORK: the path of a static busybox for ARCH:
# the host's /bin/busybox, or busybox-static:ARCH of the host's version.
np::release::busybox() {
  local arch=$1 work=$2 version deb
  if [[ "${arch}" == "$(dpkg --print-architecture)" ]]; then
    echo /bin/busybox
    return
  fi
  if [[ -x "${work}/apt-${arch}/busybox/bin/busybox" ]]; then
    echo "${work}/apt-${arch}/busybox/bin/busybox"
    return
  fi
  version=$(dpkg-query -W -f '${Version}' busybox-static 2>/dev/null) ||
    np::die "busybox-static is missing" "apt-get install busybox-static"
  deb=$(np::release::download "${arch}" "${work}" "busybox-static=${version}") || exit 1
  dpkg-deb -x "${deb}" "${work}/apt-${arch}/busybox" || np::die "unpacking ${deb} failed"
  echo "${work}/apt-${arch}/busybox/bin/busybox"
}

# np::release::staged ROOT PATH: the file PATH (absolute, in the image's
# view) names in the unpacked packages in ROOT, symlinks followed inside
# ROOT. Fails if there is none.
np::release::staged() {
  local root=$1 p=$1$2 t hops=0
  [[ -e "${p}" || -L "${p}" ]] || p=${root}${2#/usr}
  while [[ -L "${p}" ]] && ((hops++ < 20)); do
    t=$(readlink "${p}")
    [[ "${t}" == /* ]] && p=${root}${t} || p=$(dirname "${p}")/${t}
  done
  [[ -f "${p}" ]] || return 1
  echo "${p}"
}

# np::release::elf_needed FILE: FILE's NEEDED sonames, one per line.
np::release::elf_needed() {
  readelf -d "$1" 2>/dev/null | sed -n 's/.*(NEEDED).*\[\(.*\)\]$/\1/p'
}

# np::release::elf_interp FILE: FILE's program interpreter, if it has one.
np::release::elf_interp() {
  readelf -l "$1" 2>/dev/null | sed -n 's/.*Requesting program interpreter: \(.*\)\]$/\1/p'
}

# np::release::staged_binary_args ARCH ROOT BINARY...: mkimage arguments,
# one per line, that copy each BINARY (its path in the image) from the
# packages unpacked in ROOT, the program interpreter each names, and every
# library their NEEDED entries name, recursively, as
# /lib/<triplet>/<soname> (the layout ldd gives the host's image). Fails
# if a binary or a library is in none of the packages, or is not an ELF of
# ARCH.
np::release::staged_binary_args() {
  local arch=$1 root=$2 triplet machine bin src f got lib interp queue=() libs=() seen=" "
  shift 2
  triplet=$(np::release::triplet "${arch}") && machine=$(np::release::elf_machine "${arch}") || exit 1
  for bin in "$@"; do
    src=$(np::release::staged "${root}" "${bin}") || np::die "${bin} is in none of the ${arch} packages unpacked in ${root}" \
      "add the package that holds it to the download (np::release::mount_utilities_packages)"
    printf '%s\n' -file "${bin}=${src}:0755"
    queue+=("${src}")
  done
  while ((${#queue[@]} > 0)); do
    f=${queue[0]} && queue=("${queue[@]:1}")
    got=$(readelf -h "${f}" 2>/dev/null | sed -n 's/^ *Machine: *//p')
    [[ "${got}" == "${machine}" ]] || np::die "${f} is ${got:+an ELF for }${got:-not an ELF}, not for ${arch} (${machine})"
    interp=$(np::release::elf_interp "${f}")
    if [[ -n "${interp}" && "${seen}" != *" ${interp} "* ]]; then
      # The loader also satisfies a NEEDED of its own soname (libc's).
      seen+="${interp} ${interp##*/} "
      src=$(np::release::staged "${root}" "${interp}") || np::die "the loader ${interp} is in none of the ${arch} packages" "download libc6:${arch}"
      libs+=("${interp}=${src}")
    fi
    for lib in $(np::release::elf_needed "${f}"); do
      [[ "${seen}" == *" ${lib} "* ]] && continue
      seen+="${lib} "
      src=$(np::release::staged "${root}" "/lib/${triplet}/${lib}") || src=$(np::release::staged "${root}" "/usr/lib/${triplet}/${lib}") ||
        np::die "${lib}, needed by ${f#"${root}"}, is in none of the ${arch} packages unpacked in ${root}" \
          "add the package that holds it to the download (np::release::mount_utilities_packages)"
      libs+=("/lib/${triplet}/${lib}=${src}")
      queue+=("${src}")
    done
  done
  for lib in $(printf '%s\n' "${libs[@]}" | sort -u); do
    printf '%s\n' -file "${lib}"
  done
}

# np::release::mount_utilities_packages: "PACKAGE=VERSION" per line, the
# host's packages of the amd64 mount-utilities image's tools and of the
# libraries ldd finds for them (the same versions go into the other
# architecture's image).
np::release::mount_utilities_packages() {
  local bins out line
  mapfile -t bins < <(grep -v '^#' "${NODEPLUG_ROOT}/build/mount-utilities/host-binaries")
  out=$(np::images::host_binary_args "${bins[@]}") || exit 1
  for line in "${bins[@]}"; do np::release::host_package "${line}" || exit 1; done
  while read -r line; do
    [[ "${line}" == /lib* ]] || continue
    np::release::host_package "${line%%=*}" || exit 1
  done <<<"${out}"
}

# np::release::mount_utilities_foreign ARCH BUILD WORK: WORK/mount-utilities-ARCH.tar
# for an ARCH other than the host's: the host-binaries and their libraries
# from Debian's ARCH packages of the host's versions, busybox-static:ARCH,
# and image.args with BUILD/ARCH's /init and fuse daemon.
np::release::mount_utilities_foreign() {
  local arch=$1 build=$2 work=$3 root=${3}/apt-${1}/mount-utilities pkgs debs bins out host bb args deb started=${SECONDS}
  out=$(np::release::mount_utilities_packages) || exit 1
  mapfile -t pkgs < <(sort -u <<<"${out}")
  out=$(np::release::download "${arch}" "${work}" "${pkgs[@]}") || exit 1
  mapfile -t debs <<<"${out}"
  rm -rf "${root}" && mkdir -p "${root}"
  for deb in "${debs[@]}"; do
    dpkg-deb -x "${deb}" "${root}" || np::die "unpacking ${deb} failed"
  done
  mapfile -t bins < <(grep -v '^#' "${NODEPLUG_ROOT}/build/mount-utilities/host-binaries")
  out=$(np::release::staged_binary_args "${arch}" "${root}" "${bins[@]}") || exit 1
  mapfile -t host <<<"${out}"
  out=$(np::release::busybox "${arch}" "${work}") && out=$(np::images::busybox_args "${out}") || exit 1
  mapfile -t bb <<<"${out}"
  mapfile -t args < <(BIN_DIR=${build}/${arch} np::images::recipe mount-utilities)
  "${work}/mkimage" -arch "${arch}" -o "${work}/mount-utilities-${arch}.tar" "${bb[@]}" "${host[@]}" "${args[@]}" ||
    np::die "building the ${arch} mount-utilities image failed" "see build/mount-utilities/README.md"
  np::log "${arch} mount-utilities image from ${#pkgs[@]} Debian packages in $((SECONDS - started)) s"
}
