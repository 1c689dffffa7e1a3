#!/usr/bin/env bash
# Tests the images hack/e2e-upstream.sh writes for upstream's e2e specs
# (np::e2e_upstream::build_images, build/e2e-images) without a container
# runtime: builds them into a temporary directory, checks each one's name
# and command, extracts its layer into a rootfs and, chroot'ed into it:
#   agnhost: every program's libraries are there (the image's loader lists
#     them), PATH finds util-linux's nsenter, mount, losetup, ..., bash,
#     netcat-openbsd's nc, socat, curl, ip, coreutils, ... before busybox's
#     applets, sh is dash and runs them, not busybox's applets, "sh -c 'nc
#     -lU PATH'" makes a unix socket, the users and groups;
#   nginx: "nginx -t", then nginx in a network namespace of its own (nothing
#     listens on the host) answers on 127.0.0.1:80 with a worker as uid
#     101; sh, ls and chmod run;
#   busybox and pause: sh and /pause are there.
#
#   hack/test-e2e-upstream-images.sh
#
# Needs root (chroot, mount, unshare) and the binaries hack/e2e-upstream.sh
# builds (agnhost, e2eimages, mkimage, pause in ${BIN_DIR}); it builds the
# missing ones.
set -o errexit -o nounset -o pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/init.sh"
source "${NODEPLUG_ROOT}/hack/lib/image-test.sh"
source "${NODEPLUG_ROOT}/hack/lib/images.sh"
source "${NODEPLUG_ROOT}/hack/lib/e2e-upstream.sh"

IMAGE_PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
[[ ${EUID} -eq 0 ]] || np::die "chroot, mount and unshare need root" "run it with sudo"

WORK=$(mktemp -d /tmp/nodeplug-e2e-images.XXXXXX)
trap np::image_test::cleanup EXIT

ROOT=
# The host's env and chroot look the command up in PATH as a container
# runtime does (busybox's env would run its own applet of that name).
in_image() { env -i "PATH=${IMAGE_PATH}" chroot "${ROOT}" "$@"; }

# unpack NAME: extracts WORK/images/NAME.tar into WORK/NAME, sets ROOT, and
# checks that its reference is the one upstream's specs use.
unpack() {
  local tarball=${WORK}/images/$1.tar meta=${WORK}/$1.meta want got
  ROOT=${WORK}/$1
  mkdir -p "${ROOT}" "${meta}"
  tar -xf "${tarball}" -C "${meta}"
  got=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))[0]["RepoTags"][0])' "${meta}/manifest.json")
  want=$(np::e2e_upstream::image_ref "$1")
  [[ "${got}" == "${want}" ]] || np::die "$1.tar is named ${got}, want ${want}"
  tar -xf "${meta}/$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))[0]["Layers"][0])' \
    "${meta}/manifest.json")" -C "${ROOT}"
  np::log "ok: $1.tar is ${got}, $(du -sh "${ROOT}" | cut -f1) unpacked"
}

# config NAME KEY: the image's config KEY (Entrypoint, Cmd), JSON.
config() {
  python3 -c 'import glob, json, sys; d = sys.argv[1]
m = json.load(open(d + "/manifest.json"))[0]
print(json.dumps(json.load(open(d + "/" + m["Config"]))["config"][sys.argv[2]]))' "${WORK}/$1.meta" "$2"
}

build() {
  local missing=()
  [[ -x "${BIN_DIR}/mkimage" && -x "${BIN_DIR}/e2eimages" && -x "${BIN_DIR}/pause" ]] ||
    missing+=(./hack/tools/mkimage ./hack/tools/e2eimages ./build/pause)
  if ((${#missing[@]} > 0)); then
    (cd "${NODEPLUG_ROOT}" && CGO_ENABLED=0 go build -o "${BIN_DIR}/" "${missing[@]}") || np::die "building ${missing[*]} failed"
  fi
  if [[ ! -x "${BIN_DIR}/agnhost" ]]; then
    (cd "${NODEPLUG_ROOT}" && CGO_ENABLED=0 go build -ldflags "-s -w" -o "${BIN_DIR}/agnhost" k8s.io/kubernetes/test/images/agnhost) ||
      np::die "building agnhost failed"
  fi
  local started=${SECONDS}
  np::e2e_upstream::build_images "${WORK}/images"
  np::log "ok: images built in $((SECONDS - started)) s"
}

test_agnhost() {
  unpack agnhost
  [[ "$(config agnhost Entrypoint)" == '["/agnhost"]' && "$(config agnhost Cmd)" == '["pause"]' ]] ||
    np::die "agnhost's entrypoint and command are $(config agnhost Entrypoint) $(config agnhost Cmd), want /agnhost pause"
  # /proc as in a container: busybox finds itself through /proc/self/exe.
  mount -t proc proc "${ROOT}/proc"
  np::image_test::check "agnhost --help" in_image /agnhost --help
  [[ -L "${ROOT}/agnhost-2" && -d "${ROOT}/uploads" ]] || np::die "agnhost: /agnhost-2 or /uploads is missing"
  # The loader in the image lists every program's libraries: none missing.
  in_image /bin/sh -c 'for f in /usr/bin/* /usr/sbin/*; do echo "$f:"; /lib64/ld-linux-x86-64.so.2 --list "$f"; done' \
    >"${WORK}/libs" 2>&1 || true
  ! grep -q 'not found' "${WORK}/libs" || np::die "agnhost: programs whose libraries are missing:"$'\n'"$(grep -E ':$|not found' "${WORK}/libs")"
  np::log "ok: the libraries of $(grep -c ':$' "${WORK}/libs") programs are in the image"
  local t got
  for t in nsenter mount umount losetup blkid findmnt lsblk unshare nc socat curl ip bash ls chmod stat grep sed find xargs tar gzip mkfs.ext4 e2fsck; do
    got=$(in_image /bin/which "${t}")
    [[ "${got}" == /usr/* ]] || np::die "agnhost: PATH finds ${t} at '${got}', want the real tool under /usr"
  done
  np::log "ok: PATH finds the real tools before busybox"
  np::image_test::check "ls is coreutils'" in_image sh -c 'ls --version | grep -q coreutils'
  np::image_test::check "bash, curl, socat, ip, tar, find, sed, grep run" in_image sh -c \
    'bash --version && /bin/bash -c true && curl --version && socat -V && ip -V && tar --version && find --version && sed --version && grep --version'
  np::image_test::check "mkfs.ext4 -V" in_image mkfs.ext4 -V
  np::image_test::check "sh is dash" test "$(readlink "${ROOT}/bin/sh")" = ../usr/bin/dash
  np::image_test::check "sh -c runs netcat-openbsd's nc, which has -U" in_image sh -c 'nc -h 2>&1 | grep -q "OpenBSD netcat" && nc -h 2>&1 | grep -q -- "-U"'
  np::image_test::check "sh -c runs util-linux's nsenter and losetup" in_image sh -c 'nsenter --version | grep -q util-linux && losetup --version | grep -q util-linux'
  # As upstream's HostPathType Socket spec does; env, chroot and sh exec, so
  # the pid is sh's, then nc's.
  env -i "PATH=${IMAGE_PATH}" chroot "${ROOT}" sh -c 'exec nc -lU /tmp/asocket' >/dev/null 2>&1 &
  local nc=$!
  np::wait_for 5 "nc -lU listening" test -S "${ROOT}/tmp/asocket" || np::die "agnhost: nc -lU /tmp/asocket made no socket"
  kill "${nc}" 2>/dev/null || true
  wait "${nc}" 2>/dev/null || true
  grep -q '^user-defined-in-image:x:1000:' "${ROOT}/etc/passwd" &&
    grep -q '^group-defined-in-image:x:50000:user-defined-in-image$' "${ROOT}/etc/group" ||
    np::die "agnhost: /etc/passwd or /etc/group lacks upstream's user-defined-in-image (1000) or group-defined-in-image (50000)"
  np::log "ok: agnhost's users and groups"
}

test_nginx() {
  unpack nginx
  [[ "$(config nginx Cmd)" == '["nginx"]' ]] || np::die "nginx's command is $(config nginx Cmd), want nginx"
  mount --bind /dev "${ROOT}/dev"
  mount -t proc proc "${ROOT}/proc"
  np::image_test::check "nginx -t" in_image nginx -t
  np::image_test::check "sh, ls and chmod" in_image /bin/sh -c 'ls /usr/share/nginx/html && chmod 0755 /tmp && ls -ld /tmp'
  # nginx in a network namespace of its own: port 80 there, not on the host.
  unshare --net --fork sh -c '
    ip link set lo up
    env -i PATH="$2" chroot "$1" nginx &
    for _ in $(seq 50); do curl -fsS -o "$3/index" http://127.0.0.1:80/ 2>/dev/null && break; sleep 0.1; done
    ps -o uid= --ppid "$(cat "$1/run/nginx.pid")" >"$3/workers" 2>/dev/null
    kill "$(cat "$1/run/nginx.pid")"; wait' sh "${ROOT}" "${IMAGE_PATH}" "${WORK}" >"${WORK}/nginx.log" 2>&1 || true
  grep -q 'e2e-test-images/nginx' "${WORK}/index" 2>/dev/null ||
    np::die "nginx did not serve /usr/share/nginx/html/index.html on port 80:"$'\n'"$(cat "${WORK}/nginx.log")"
  np::log "ok: nginx serves /usr/share/nginx/html on port 80"
  [[ "$(tr -d ' ' <"${WORK}/workers")" == 101 ]] || np::die "nginx's worker runs as uid '$(cat "${WORK}/workers")', want 101 (nginx)"
  np::log "ok: nginx's worker runs as nginx (101)"
}

test_others() {
  unpack busybox
  np::image_test::check "busybox sh" in_image sh -c 'ls / >/dev/null'
  unpack pause
  [[ -x "${ROOT}/pause" && "$(config pause Entrypoint)" == '["/pause"]' ]] || np::die "pause: /pause is missing or not the entrypoint"
  np::log "ok: pause"
}

build
test_agnhost
test_nginx
test_others
np::log "upstream's e2e images: all checks passed"
