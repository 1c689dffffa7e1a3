#!/usr/bin/env bash
# np::images::build writes the cluster's images as docker-archive tarballs
# with hack/tools/mkimage (no docker, no registry): pause, busybox, and the
# recipes in build/ (flexvolume-installer, local-volume-provisioner).
# np::images::import loads them into the local containerd. Pods use
# imagePullPolicy Never or IfNotPresent.

PAUSE_IMAGE=docker.io/nodeplug/pause:1
BUSYBOX_IMAGE=docker.io/nodeplug/busybox:1

np::images::busybox_args() {
  local bb=/bin/busybox args=()
  [[ -x "${bb}" ]] || np::die "busybox-static is missing" "apt-get install busybox-static"
  args+=(-file "/bin/busybox=${bb}:0755" -dir /tmp -dir /proc -dir /sys -dir /dev -dir /etc -dir /mnt)
  local applet
  for applet in $("${bb}" --list); do
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

np::images::build() {
  local dir=${LOCAL_UP_DIR}/images
  mkdir -p "${dir}"
  "${BIN_DIR}/mkimage" -o "${dir}/pause.tar" -name "${PAUSE_IMAGE}" \
    -file "/pause=${BIN_DIR}/pause:0755" -entrypoint /pause || np::die "building the pause image failed"
  local bb args
  mapfile -t bb < <(np::images::busybox_args)
  "${BIN_DIR}/mkimage" -o "${dir}/busybox.tar" -name "${BUSYBOX_IMAGE}" "${bb[@]}" \
    -entrypoint /bin/sh || np::die "building the busybox image failed"
  mapfile -t args < <(np::images::recipe flexvolume-installer)
  "${BIN_DIR}/mkimage" -o "${dir}/flexvolume-installer.tar" "${args[@]}" ||
    np::die "building the flexvolume-installer image failed" "see build/flexvolume-installer/README.md"
  # Busybox provides the block cleaner commands (blkdiscard, shred, dd).
  mapfile -t args < <(np::images::recipe local-volume-provisioner)
  "${BIN_DIR}/mkimage" -o "${dir}/local-volume-provisioner.tar" "${args[@]}" "${bb[@]}" ||
    np::die "building the local-volume-provisioner image failed" "see build/local-volume-provisioner/README.md"
}

# np::images::import FILE...: load docker-archive tarballs into containerd.
np::images::import() {
  local f
  for f in "$@"; do
    ctr --address "${CONTAINERD_SOCK}" -n k8s.io images import --no-unpack=false "${f}" >/dev/null ||
      np::die "importing ${f} into containerd failed" "check ${LOCAL_UP_DIR}/logs/containerd.log"
  done
}
