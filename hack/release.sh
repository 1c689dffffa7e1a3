#!/usr/bin/env bash
# make release: versioned tarballs of nodeplug's binaries for linux/amd64
# and linux/arm64, the images as OCI archives (one multi-platform index
# each), the manifests and the Helm charts packaged, and their SHA256SUMS,
# into _output/release/<version> (docs/release.md).
#   RELEASE_VERSION=v1.2.3   the version (default v0.1.0-<commit>)
#   RELEASE_ONLY=small       leave out kubelet, kube-controller-manager and
#                            the mount-utilities image (a quick check of the rest)
#   RELEASE_REGISTRY=host[:port]/path  then push the images (multi-platform
#                            indexes) and the chart (OCI) there
#   RELEASE_REGISTRY_CA=ca.crt  the CA of that registry (default: system roots)
set -o errexit -o nounset -o pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/init.sh"
source "${NODEPLUG_ROOT}/hack/lib/release.sh"
source "${NODEPLUG_ROOT}/hack/lib/release-push.sh"
np::release::all
if [[ -n "${RELEASE_REGISTRY:-}" ]]; then
  np::release::push "${OUT_DIR}/release/$(np::release::version)" "$(np::release::version)" "${RELEASE_REGISTRY}" "${RELEASE_REGISTRY_CA:-}"
fi
