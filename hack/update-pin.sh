#!/usr/bin/env bash
# Regenerates go.mod's replace block: every k8s.io staging module that
# upstream's go.mod replaces with ./staging/src/k8s.io/X is pinned to the
# v0.Y.Z that matches the k8s.io/kubernetes v1.Y.Z required by go.mod.
# It then lists the upstream declarations nodeplug copies or relies on that
# the new version changed; it does not record them (see
# hack/update-upstream-internals.sh, to be run after a review).
# Usage: hack/update-pin.sh [v1.Y.Z]   (default: the version go.mod requires)
set -o errexit -o nounset -o pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/init.sh"
source "${NODEPLUG_ROOT}/hack/lib/pin.sh"
cd "${NODEPLUG_ROOT}"
version=${1:-${KUBE_VERSION}}
if [[ "${version}" != "${KUBE_VERSION}" ]]; then
  go mod edit -require "k8s.io/kubernetes@${version}"
fi
np::pin::write "${version}"
go mod tidy
np::log "go.mod pins k8s.io/kubernetes ${version} and its staging modules at v0.${version#v1.}"
# The hashes of the upstream code nodeplug copies or relies on are not
# refreshed here: list what changed, for a review before
# hack/update-upstream-internals.sh records it.
hack/verify-upstream-internals.sh ||
  np::warn "review the upstream changes listed above before running hack/update-upstream-internals.sh (make verify fails until then)"
