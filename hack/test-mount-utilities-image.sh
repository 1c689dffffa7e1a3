#!/usr/bin/env bash
# Tests a built mount-utilities image without a container runtime: extracts
# its layer into a temporary rootfs and, chroot'ed into it, runs the host
# tools it carries (so a missing library or loader shows), checks that PATH
# finds them before busybox's applets, makes, checks and loop-mounts an ext4
# file system, runs /init, and mounts and unmounts a volume through the
# nodeplug.io/fuse flex driver. Everything it mounts is unmounted on exit.
#
#   hack/test-mount-utilities-image.sh [IMAGE.tar]
#
# Default image: ${LOCAL_UP_DIR}/images/mount-utilities.tar (make local-up
# builds it). Needs root, and /dev/fuse for the FUSE part.
set -o errexit -o nounset -o pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/init.sh"
source "${NODEPLUG_ROOT}/hack/lib/image-test.sh"

IMAGE=${1:-${LOCAL_UP_DIR}/images/mount-utilities.tar}
DRIVER=/usr/libexec/kubernetes/kubelet-plugins/volume/exec/nodeplug.io~fuse/fuse
IMAGE_PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin

[[ ${EUID} -eq 0 ]] || np::die "chroot and mount need root" "run it with sudo"
[[ -f "${IMAGE}" ]] || np::die "no image at ${IMAGE}" "run make local-up, or pass the tarball"

WORK=$(mktemp -d /tmp/nodeplug-mount-utilities.XXXXXX)
ROOT=${WORK}/rootfs

trap np::image_test::cleanup EXIT

in_image() { chroot "${ROOT}" /bin/env -i "PATH=${IMAGE_PATH}" "$@"; }

mkdir -p "${ROOT}"
tar -xf "${IMAGE}" -C "${WORK}" manifest.json
layer=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))[0]["Layers"][0])' "${WORK}/manifest.json")
tar -xf "${IMAGE}" -O "${layer}" | tar -x -C "${ROOT}"

# The host tools and their links run in the rootfs: libraries and loader are there.
np::image_test::check "mke2fs -V" in_image /usr/sbin/mke2fs -V
for t in mkfs.ext2 mkfs.ext3 mkfs.ext4 e2fsck fsck.ext2 fsck.ext3 fsck.ext4; do
  np::image_test::check "${t} -V" in_image "/usr/sbin/${t}" -V
done
for t in /usr/sbin/fsck /usr/sbin/blkid /usr/bin/mount /usr/bin/umount; do
  np::image_test::check "${t} --version" in_image "${t}" --version
done

# PATH finds the real tools, not busybox's applets in /bin.
for t in mkfs.ext4 fsck.ext4 e2fsck fsck blkid mount umount nodeplug-fuse-loopback; do
  got=$(in_image /bin/which "${t}")
  [[ "${got}" == /usr/* ]] || np::die "PATH finds ${t} at '${got}', want the real tool under /usr"
done
np::log "ok: PATH finds the real tools before busybox"

mount -t proc proc "${ROOT}/proc"
mount -t sysfs sysfs "${ROOT}/sys"
mount --bind /dev "${ROOT}/dev"

truncate -s 64M "${ROOT}/tmp/disk.img"
np::image_test::check "mkfs.ext4 on a file" in_image mkfs.ext4 -q -F /tmp/disk.img
np::image_test::check "fsck -n (util-linux fsck runs fsck.ext4)" in_image fsck -t ext4 -n /tmp/disk.img
[[ "$(in_image blkid -o value -s TYPE /tmp/disk.img)" == ext4 ]] || np::die "blkid does not see ext4 on the new file system"
np::log "ok: blkid sees ext4"
np::image_test::check "mount -o loop" in_image mount -o loop /tmp/disk.img /mnt
np::image_test::check "write to the ext4 file system" in_image sh -c 'echo hello >/mnt/hello && grep -q hello /mnt/hello'
np::image_test::check "umount" in_image umount /mnt

# /init: a command's exit status passes through; without one, SIGTERM ends it with 0.
set +o errexit
in_image /init sh -c 'exit 3' 2>/dev/null
rc=$?
set -o errexit
((rc == 3)) || np::die "/init sh -c 'exit 3' exited ${rc}, want 3"
# chroot and env exec, so the pid is /init's.
chroot "${ROOT}" /bin/env -i "PATH=${IMAGE_PATH}" /init 2>/dev/null &
init_pid=$!
sleep 0.5
kill -TERM "${init_pid}"
wait "${init_pid}" || np::die "/init without a command exited $? on SIGTERM, want 0"
np::log "ok: /init"

if [[ ! -c /dev/fuse ]]; then
  np::warn "no /dev/fuse: skipping the nodeplug.io/fuse driver (modprobe fuse)"
  exit 0
fi
[[ "$(in_image "${DRIVER}" init)" == '{"status":"Success","capabilities":{"attach":false}}' ]] ||
  np::die "driver init: unexpected reply"
mkdir -p "${ROOT}/mnt/vol"
out=$(in_image "${DRIVER}" mount /mnt/vol '{"kubernetes.io/pod.name":"test"}')
[[ "${out}" == '{"status":"Success"}' ]] || np::die "driver mount: ${out}"
awk -v d="${ROOT}/mnt/vol" '$5 == d' /proc/self/mountinfo | grep -q ' - fuse.nodeplug nodeplug-fuse ' ||
  np::die "driver mount: ${ROOT}/mnt/vol is not a fuse.nodeplug mount"
echo through-fuse >"${ROOT}/mnt/vol/f"
[[ "$(cat "${ROOT}/var/lib/nodeplug-fuse/mnt_vol/f")" == through-fuse ]] ||
  np::die "a file written through the FUSE mount is not in /var/lib/nodeplug-fuse/mnt_vol (the backing directory of /mnt/vol)"
out=$(in_image "${DRIVER}" unmount /mnt/vol)
[[ "${out}" == '{"status":"Success"}' ]] || np::die "driver unmount: ${out}"
! awk -v d="${ROOT}/mnt/vol" '$5 == d' /proc/self/mountinfo | grep -q . ||
  np::die "driver unmount: ${ROOT}/mnt/vol is still mounted"
np::wait_for 10 "FUSE daemon exit after the unmount" \
  grep -q "Unmounted from outside" "${ROOT}/var/log/nodeplug-fuse/daemon.log" ||
  np::die "the FUSE daemon did not exit after the unmount:"$'\n'"$(cat "${ROOT}/var/log/nodeplug-fuse/daemon.log")"
np::log "driver.log: $(tr '\n' '|' <"${ROOT}/var/log/nodeplug-fuse/driver.log")"
np::log "ok: nodeplug.io/fuse init, mount, unmount"
np::log "mount-utilities image ${IMAGE}: all checks passed"
