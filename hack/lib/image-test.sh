#!/usr/bin/env bash
# The common part of the scripts that test an image without a container
# runtime by unpacking it below ${WORK} and running its programs with
# chroot (hack/test-mount-utilities-image.sh,
# hack/test-e2e-upstream-images.sh). Source it after init.sh; the script
# sets WORK.

# np::image_test::cleanup unmounts everything below WORK, deepest first,
# then removes it (the script's EXIT trap).
np::image_test::cleanup() {
  local mp
  for mp in $(awk -v w="${WORK}/" 'index($5, w) == 1 { print $5 }' /proc/self/mountinfo | sort -r); do
    umount -l "${mp}" || np::warn "could not unmount ${mp}"
  done
  rm -rf "${WORK}"
}

# np::image_test::check WHAT COMMAND...: runs COMMAND, logs "ok: WHAT", or
# fails naming WHAT with COMMAND's output.
np::image_test::check() {
  local what=$1
  shift
  "$@" >"${WORK}/out" 2>&1 || np::die "${what} failed:"$'\n'"$(cat "${WORK}/out")"
  np::log "ok: ${what}"
}
