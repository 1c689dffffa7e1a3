#!/usr/bin/env bash
# np::images::build writes the cluster's images as docker-archive tarballs
# with hack/tools/mkimage (no docker, no registry): pause, busybox, and the
# recipes in build/ (flexvolume-installer, local-volume-provisioner,
# mount-utilities, dra-test-driver, dra-example-driver, and coredns unless
# LOCAL_UP_DNS=false).
# np::images::import loads them into the local containerd. Pods use
# imagePullPolicy Never or IfNotPresent.

PAUSE_IMAGE=docker.io/nodeplug/pause:1
BUSYBOX_IMAGE=docker.io/nodeplug/busybox:1

# np::images::busybox_args [BUSYBOX]: mkimage arguments, one per line, of
# BUSYBOX (default the host's /bin/busybox; make release passes another
# architecture's build of the same busybox-static version) and a link per
# applet, listed by the host's busybox.
np::images::busybox_args() {
  local bb=${1:-/bin/busybox} args=()
  [[ -x /bin/busybox && -f "${bb}" ]] || np::die "busybox-static is missing" "apt-get install busybox-static"
  args+=(-file "/bin/busybox=${bb}:0755" -dir /tmp -dir /proc -dir /sys -dir /dev -dir /etc -dir /mnt)
  local applet
  for applet in $(/bin/busybox --list); do
    [[ "${applet}" == busybox ]] || args+=(-link "/bin/${applet}=busybox")
  done
  printf '%s\n' "${args[@]}"
}

# np::images::recipe NAME: the mkimage arguments of build/NAME/image.args,
# one per line, with ${BIN_DIR} and ${REPO} substituted.
np::images::recipe() {
  local f=${NODEPLUG_ROOT}/build/$1/image.args
  grep -v '^#' "${f}" | sed -e "s|\${BIN_DIR}|${BIN_DIR}|g" -e "s|\${REPO}|${NODEPLUG_ROOT}|g"
}

# np::images::host_binary_args BINARY...: mkimage arguments, one per line,
# that copy the host's BINARY (an absolute path; a host without merged /usr
# may have it without the /usr prefix) to the same path in the image, with
# their shared libraries (np::images::library_args). Fails if a binary or a
# library is missing.
np::images::host_binary_args() {
  local bin src srcs=()
  for bin in "$@"; do
    src=${bin}
    [[ -e "${src}" ]] || src=/${bin#/usr/}
    [[ -f "${src}" && -x "${src}" ]] || np::die "${bin} is not on this host" \
      "run hack/install-deps.sh as root (it installs e2fsprogs, util-linux and mount)"
    printf '%s\n' -file "${bin}=$(readlink -f "${src}"):0755"
    srcs+=("${src}")
  done
  ((${#srcs[@]} > 0)) || return 0
  np::images::library_args "${srcs[@]}"
}

# np::images::library_args BINARY...: mkimage arguments, one per line, that
# copy every shared library ldd reports for the BINARYs (static ones and
# scripts have none) and the dynamic loader, at the paths ldd reports.
# Fails if a library is missing.
np::images::library_args() {
  local out line lib libs=()
  # ldd exits non-zero when one of them is not dynamic; "not found" is the error.
  out=$(ldd "$@" 2>&1) || true
  grep -q 'not found' <<<"${out}" && np::die "shared libraries are missing:"$'\n'"$(grep -E ':$|not found' <<<"${out}")"
  while read -r line; do
    case "${line}" in
    *:) continue ;;                    # "/usr/bin/ls:", the header of each binary
    *'=> /'*) lib=${line#*=> } ;;     # libc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x...)
    /*' (0x'*) lib=${line} ;;         # /lib64/ld-linux-x86-64.so.2 (0x...)
    *) continue ;;                    # linux-vdso.so.1, "not a dynamic executable"
    esac
    libs+=("${lib%% (*}")
  done <<<"${out}"
  ((${#libs[@]} > 0)) || return 0
  for lib in $(printf '%s\n' "${libs[@]}" | sort -u); do
    printf '%s\n' -file "${lib}=$(readlink -f "${lib}")"
  done
}

# np::images::package_binaries PACKAGE...: the programs the host's Debian
# PACKAGEs install in bin and sbin directories, one per line, under /usr
# (/bin/ls is /usr/bin/ls; np::images::host_binary_args copies them).
np::images::package_binaries() {
  local pkg files f
  for pkg in "$@"; do
    files=$(dpkg -L "${pkg}" 2>/dev/null) || np::die "the Debian package ${pkg} is not installed" \
      "run hack/install-deps.sh as root, or apt-get install ${pkg}"
    while read -r f; do
      [[ -f "${f}" && -x "${f}" ]] || continue
      [[ "${f}" == /usr/* ]] || f=/usr${f}
      echo "${f}"
    done < <(grep -E '^(/usr)?/s?bin/[^/]+$' <<<"${files}")
  done | sort -u
}

# np::images::build_mount_utilities DIR: DIR/mount-utilities.tar from
# build/mount-utilities (image.args, host-binaries) and busybox.
np::images::build_mount_utilities() {
  local dir=$1 recipe=${NODEPLUG_ROOT}/build/mount-utilities out args host bb
  out=$(np::images::host_binary_args $(grep -v '^#' "${recipe}/host-binaries")) ||
    np::die "collecting the host binaries of the mount-utilities image failed" "see build/mount-utilities/README.md"
  mapfile -t host <<<"${out}"
  out=$(np::images::busybox_args /bin/busybox) || np::die "busybox-static is missing" "apt-get install busybox-static"
  mapfile -t bb <<<"${out}"
  mapfile -t args < <(np::images::recipe mount-utilities)
  # Busybox's applets (mount, fsck, blkid, ...) are links in /bin; the real
  # tools are in /usr/sbin and /usr/bin, ahead of /bin in the image's PATH.
  "${BIN_DIR}/mkimage" -o "${dir}/mount-utilities.tar" "${bb[@]}" "${host[@]}" "${args[@]}" ||
    np::die "building the mount-utilities image failed" "see build/mount-utilities/README.md"
}

# np::images::build_coredns DIR: DIR/coredns.tar from build/coredns, tagged
# with the CoreDNS release hack/tools/coredns pins.
np::images::build_coredns() {
  local dir=$1 args release
  [[ -x "${BIN_DIR}/coredns" ]] || np::die "${BIN_DIR}/coredns is missing" \
    "run hack/build.sh (or local-up without SKIP_BUILD=1), or set LOCAL_UP_DNS=false"
  mapfile -t args < <(np::images::recipe coredns)
  release=$(np::pinned_version coredns github.com/coredns/coredns)
  [[ " ${args[*]} " == *"/coredns:${release} "* ]] ||
    np::die "build/coredns/image.args does not tag the image with the release hack/tools/coredns/go.mod pins (${release})" \
      "make the two agree (and deploy/coredns/deployment.yaml's image)"
  "${BIN_DIR}/mkimage" -o "${dir}/coredns.tar" "${args[@]}" ||
    np::die "building the coredns image failed" "see build/coredns/README.md"
}

np::images::build() {
  local dir=${LOCAL_UP_DIR}/images
  mkdir -p "${dir}"
  "${BIN_DIR}/mkimage" -o "${dir}/pause.tar" -name "${PAUSE_IMAGE}" \
    -file "/pause=${BIN_DIR}/pause:0755" -entrypoint /pause || np::die "building the pause image failed"
  local bb args
  mapfile -t bb < <(np::images::busybox_args /bin/busybox)
  "${BIN_DIR}/mkimage" -o "${dir}/busybox.tar" -name "${BUSYBOX_IMAGE}" "${bb[@]}" \
    -entrypoint /bin/sh || np::die "building the busybox image failed"
  mapfile -t args < <(np::images::recipe flexvolume-installer)
  "${BIN_DIR}/mkimage" -o "${dir}/flexvolume-installer.tar" "${args[@]}" ||
    np::die "building the flexvolume-installer image failed" "see build/flexvolume-installer/README.md"
  # The block cleaner commands are upstream's /scripts/*.sh (links to the
  # binary, in image.args) and busybox's applets (blkdiscard, shred, dd).
  mapfile -t args < <(np::images::recipe local-volume-provisioner)
  "${BIN_DIR}/mkimage" -o "${dir}/local-volume-provisioner.tar" "${args[@]}" "${bb[@]}" ||
    np::die "building the local-volume-provisioner image failed" "see build/local-volume-provisioner/README.md"
  np::images::build_mount_utilities "${dir}"
  mapfile -t args < <(np::images::recipe dra-test-driver)
  "${BIN_DIR}/mkimage" -o "${dir}/dra-test-driver.tar" "${args[@]}" ||
    np::die "building the dra-test-driver image failed" "see build/dra-test-driver/README.md"
  mapfile -t args < <(np::images::recipe dra-example-driver)
  # The image's tag is the release the chart's appVersion names.
  local release
  release=$(np::pinned_version dra-example-driver sigs.k8s.io/dra-example-driver)
  [[ " ${args[*]} " == *":${release} "* ]] ||
    np::die "build/dra-example-driver/image.args does not tag the image with the release hack/tools/dra-example-driver/go.mod pins (${release})" \
      "make the two agree"
  "${BIN_DIR}/mkimage" -o "${dir}/dra-example-driver.tar" "${args[@]}" ||
    np::die "building the dra-example-driver image failed" "see build/dra-example-driver/README.md"
  [[ "${LOCAL_UP_DNS:-true}" == false ]] || np::images::build_coredns "${dir}"
}

# np::images::import FILE...: load docker-archive tarballs into containerd.
np::images::import() {
  local f
  for f in "$@"; do
    ctr --address "${CONTAINERD_SOCK}" -n k8s.io images import --no-unpack=false "${f}" >/dev/null ||
      np::die "importing ${f} into containerd failed" "check ${LOCAL_UP_DIR}/logs/containerd.log"
  done
}
