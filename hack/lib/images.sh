#!/usr/bin/env bash
# np::images::build writes the cluster's images as docker-archive tarballs
# with hack/tools/mkimage (no docker, no registry) and imports them into
# the local containerd. Pods use imagePullPolicy Never or IfNotPresent.

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

np::images::build() {
  local dir=${LOCAL_UP_DIR}/images
  mkdir -p "${dir}"
  "${BIN_DIR}/mkimage" -o "${dir}/pause.tar" -name "${PAUSE_IMAGE}" \
    -file "/pause=${BIN_DIR}/pause:0755" -entrypoint /pause || np::die "building the pause image failed"
  local args
  mapfile -t args < <(np::images::busybox_args)
  "${BIN_DIR}/mkimage" -o "${dir}/busybox.tar" -name "${BUSYBOX_IMAGE}" "${args[@]}" \
    -entrypoint /bin/sh || np::die "building the busybox image failed"
}

# np::images::import FILE...: load docker-archive tarballs into containerd.
np::images::import() {
  local f
  for f in "$@"; do
    ctr --address "${CONTAINERD_SOCK}" -n k8s.io images import --no-unpack=false "${f}" >/dev/null ||
      np::die "importing ${f} into containerd failed" "check ${LOCAL_UP_DIR}/logs/containerd.log"
  done
}
