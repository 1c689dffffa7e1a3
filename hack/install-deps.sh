#!/usr/bin/env bash
# Installs the Debian packages the cluster and the tests use (runc,
# busybox-static, e2fsprogs, ...), when running as root and any is
# missing, and loads the fuse module if /dev/fuse is missing. Quiet and
# quick when everything is there.
set -o errexit -o nounset -o pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/init.sh"
source "${NODEPLUG_ROOT}/hack/lib/cluster.sh"
source "${NODEPLUG_ROOT}/hack/lib/preflight.sh"
mkdir -p "${OUT_DIR}"
if [[ ${EUID} -ne 0 ]]; then
  np::warn "not root: not installing apt packages (${APT_PACKAGES[*]})"
  exit 0
fi
np::preflight::apt
np::preflight::load_fuse || np::warn "/dev/fuse is missing (modprobe fuse failed): the FUSE tests skip (and fail under CI=true)"
